// Random single-op cases for the backend conformance test (tests/backend_conformance_test.cpp)
// and the self-contained GPU check (tools/gpu_check): for each op type a generator of small ONNX
// graphs with random shapes and attributes, a runner for the CPU reference (plain NCHW, no
// passes, one thread) and for a backend under test, and the comparison of the two.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/native/backend.h"
#include "engine/native/session.h"

namespace sd::native::conformance {

struct OpCase {
  std::string what;                 // shapes and attributes, for the failure message
  std::string model;                // the serialized ONNX graph
  std::vector<HostTensor> inputs;   // one per graph input
};

using Rng = std::mt19937;
using Generator = std::function<OpCase(Rng&)>;

// Every op that has random cases, and how to make one. A backend other than the CPU must have
// cases for every op it claims.
const std::map<std::string, Generator>& generators();

struct CaseRun {
  std::vector<HostTensor> outputs;
  PlanSummary summary;
  std::string error;
};

// reference: the CPU's plain path. Otherwise the default path (channels-last, passes, two
// threads) with `backend` preferred (nullptr: the CPU alone).
// device_fp16: the backend's float tensors in fp16 where it prefers it (--precision fp16).
CaseRun run_case(const OpCase& c, bool reference, const std::shared_ptr<const Backend>& backend, bool device_fp16 = false);

struct OpResult {
  std::string backend, op;
  int cases = 0;            // generated
  int ran_on_backend = 0;   // compared with the op on the backend under test (or nowhere: a view)
  double max_abs_error = 0; // over every compared element
  double max_rel_error = 0; // |got - ref| / max(|ref|, 1e-3), over every compared element
  std::string failure;      // the first case outside the tolerance, or that failed to run; "" if none
  std::string device_float; // what the backend under test stored float tensors as ("float16" in fp16), from the plans
  bool passed() const { return failure.empty() && ran_on_backend > 0; }
};

// `cases` random cases of `op` (seeded by backend_name and op: the same cases on every machine),
// each on the reference and on `backend`; |got - ref| <= atol + rtol * |ref| element by element.
// Stops at the first failure.
// device_fp16: the backend under test runs with fp16 storage (the reference stays float32).
OpResult check_op(const std::string& backend_name, const std::string& op, const std::shared_ptr<const Backend>& backend,
                  int cases, double atol, double rtol, bool device_fp16 = false);

// The tolerances of the conformance cases: float32 on a device as on the CPU within rounding;
// fp16 storage (every input, weight and output rounded to fp16, arithmetic and accumulation in
// float32): |got - ref| <= 2e-2 + 1e-2 |ref| on the cases' values (inputs within +-1 or a little
// beyond, convolutions of up to a few hundred terms). docs/gpu.md, "fp16".
inline constexpr double kFp32Atol = 1e-4, kFp32Rtol = 1e-4;
inline constexpr double kFp16Atol = 2e-2, kFp16Rtol = 1e-2;
// A whole model's raw outputs with fp16 storage against the CPU's float32: max |diff| / max |ref|
// over every output (float32 on a GPU: 1e-3, the GPU check's fp32 parity). Errors grow through
// the layers; the bundled model in emulated fp16 (the test device rounding every tensor) shows
// 7.4e-4 (fp16_test.cpp), a thirteenth of the tolerance.
inline constexpr double kFp32ModelTolerance = 1e-3, kFp16ModelTolerance = 1e-2;

}  // namespace sd::native::conformance
