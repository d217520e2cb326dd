// Backend conformance, in the spirit of ggml's test-backend-ops: every op a backend claims, on
// random shapes and attributes (fixed seeds: the same cases on every machine), run on that backend
// and on the CPU reference, outputs compared (the cases: conformance/op_cases.h). The reference is
// the CPU backend on the plain path: every tensor NCHW, no graph passes, one thread. Backends under
// test:
//   cpu   the CPU backend as it runs by default (channels-last between convolutions, fusion passes,
//         two threads). Its other ops are covered by ONNX's node tests (onnx_conformance_test.cpp).
//   test  the test device backend (fake_device_backend.h): CPU kernels in memory of its own, so it
//         checks the harness, the copies and the planner's placement.
//   cuda  the CUDA backend where it is built and a GPU is present.
// Cases with 4-D data come in two forms: the op on the graph input, and the op behind a 1x1
// convolution, so that on a channels-last backend it runs on the physical NHWC layout.
#include <gtest/gtest.h>

#include <algorithm>

#include "conformance/op_cases.h"
#include "engine/native/backend.h"
#include "engine/native/cuda/cuda_backend.h"
#include "fake_device_backend.h"

namespace sd::native {
namespace {

using conformance::generators;

constexpr int kCasesPerOp = 64;

// How a backend under test is run, and how closely it must match the reference.
struct BackendUnderTest {
  std::string name;
  std::function<std::shared_ptr<const Backend>()> make;  // nullptr result: the CPU alone
  double atol = conformance::kFp32Atol, rtol = conformance::kFp32Rtol;  // |got - ref| <= atol + rtol * |ref|
  bool fp16 = false;  // planned with fp16 storage on the backend (--precision fp16)
};

std::vector<BackendUnderTest> backends_under_test() {
  std::vector<BackendUnderTest> list;
  list.push_back({"cpu", [] { return std::shared_ptr<const Backend>(); }});
  list.push_back({"test", [] {
                    std::set<std::string> ops;
                    for (const auto& [op, gen] : generators()) ops.insert(op);
                    return std::shared_ptr<const Backend>(std::make_shared<test::FakeDeviceBackend>(ops));
                  }});
  // The test device storing fp16 (rounding emulated on the host): the planner's fp16 placement,
  // the converting copies and the fp16 tolerance on every op's cases.
  list.push_back({"test_fp16",
                  [] {
                    std::set<std::string> ops;
                    for (const auto& [op, gen] : generators()) ops.insert(op);
                    return std::shared_ptr<const Backend>(
                        std::make_shared<test::FakeDeviceBackend>(ops, Layout::kNhwc, DType::kFloat16));
                  },
                  conformance::kFp16Atol, conformance::kFp16Rtol, true});
  // The GPU's where there is one, in fp32 (the CPU's tolerance) and fp16.
  if (cuda_backend(0)) {
    list.push_back({"cuda", [] { return *cuda_backend(0); }});
    list.push_back({"cuda_fp16", [] { return *cuda_backend(0); }, conformance::kFp16Atol, conformance::kFp16Rtol, true});
  }
  return list;
}

class BackendConformance : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(BackendConformance, MatchesTheCpuReferenceOnRandomCases) {
  const auto& [backend_name, op] = GetParam();
  BackendUnderTest under;
  for (auto& b : backends_under_test())
    if (b.name == backend_name) under = b;
  const auto result = conformance::check_op(backend_name, op, under.make(), kCasesPerOp, under.atol, under.rtol, under.fp16);
  EXPECT_TRUE(result.failure.empty()) << result.failure;
  // The margins, for --gtest_output=xml (how close a tolerance is to being reached).
  ::testing::Test::RecordProperty("max_abs_error", std::to_string(result.max_abs_error));
  ::testing::Test::RecordProperty("max_rel_error", std::to_string(result.max_rel_error));
  // A backend that claims the op runs at least some of its cases.
  EXPECT_GT(result.ran_on_backend, 0) << backend_name << " claims " << op << " but ran none of " << kCasesPerOp << " random cases";
}

std::vector<std::tuple<std::string, std::string>> conformance_params() {
  std::vector<std::tuple<std::string, std::string>> params;
  for (const auto& b : backends_under_test()) {
    auto backend = b.make();
    const std::vector<std::string> claimed = backend ? backend->op_types() : cpu_backend()->op_types();
    for (const auto& op : claimed)
      if (generators().count(op)) params.emplace_back(b.name, op);
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(Ops, BackendConformance, ::testing::ValuesIn(conformance_params()),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

TEST(BackendConformanceCoverage, EveryOpADeviceBackendClaimsHasRandomCases) {
  for (const auto& b : backends_under_test()) {
    auto backend = b.make();
    if (!backend) continue;  // the CPU's ops are ONNX's node tests' business too
    for (const auto& op : backend->op_types()) EXPECT_TRUE(generators().count(op)) << b.name << " claims " << op << ", which has no random cases";
  }
}

TEST(BackendConformanceCoverage, TheCudaBackendIsCheckedWhereAGpuIsPresent) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << "no CUDA backend here, its conformance cases are not run: " << cuda.error().message;
  bool listed = false;
  for (const auto& b : backends_under_test()) listed = listed || b.name == "cuda";
  EXPECT_TRUE(listed);
}

TEST(BackendConformanceCoverage, TheCpuClaimsEveryOpWithCases) {
  const auto ops = cpu_backend()->op_types();
  for (const auto& [op, gen] : generators()) EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
}

}  // namespace
}  // namespace sd::native
