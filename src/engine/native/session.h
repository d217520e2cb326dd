// The native engine's own API below the sd::Engine adapter: load an ONNX model once (immutable,
// shared), run it from any number of sessions (one per thread). Used by NativeEngine, the ONNX
// conformance tests (any dtype, several inputs) and the loader fuzz target.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/native/conv_choice.h"
#include "engine/native/graph.h"
#include "engine/native/host_tensor.h"
#include "engine/native/precision.h"

namespace sd::native {

struct LoadOptions {
  bool optimize = true;  // graph passes (folding, fusion); off for debugging and parity checks
  // With optimize: QDQ convolutions folded into int8 ones (passes::fuse_qdq_convolutions); off,
  // they run as written (dequantized, a float Conv, quantized), the reference the tests use.
  bool fuse_qdq = true;
  // Whether this processor's int8 convolutions compute every QDQ convolution exactly (AVX-512
  // VNNI, int8_support.h): the processor's answer by default; false: as without VNNI, where
  // those they would not compute exactly are computed in float32 (the tests of that path on
  // any machine).
  std::optional<bool> int8_exact;
  // kBf16: float convolutions run in bf16 (precision.h). The caller checks the CPU has it
  // (resolve_precision with cpu_has_bf16()); where it does not, oneDNN would emulate it, slowly.
  Precision precision = Precision::kFp32;
  // The 3x3 stride-1 convolutions' implementation (conv_choice.h): timed per node, or forced.
  Conv3x3Choice conv3x3 = Conv3x3Choice::kMeasured;
  // oneDNN's int8 implementations, and bf16 against float32 under kBf16 (conv_choice.h): timed
  // per node (kTimedCandidate), or the index forced.
  int conv_candidate = kTimedCandidate;
  // With kBf16 (and conv_candidate timed or 0): tensors read only by bf16 convolutions (and Concats
  // kept bf16) are bf16 (keep_bf16_tensors, precision.h); off, every tensor stays float32 (the
  // reference the tests use).
  bool bf16_tensors = true;
};

struct IoInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;  // -1 for a dynamic dim
};

class NativeModel {
 public:
  // Parses, validates (every op supported, no cycles, initializers consistent), optimizes.
  // Errors: kModel with a one-line message naming the file and the problem (op, node, opset...).
  static Result<std::shared_ptr<const NativeModel>> load(const std::string& path, const LoadOptions& options = {});
  static Result<std::shared_ptr<const NativeModel>> load_from_bytes(const void* data, size_t size,
                                                                    const std::string& base_dir,
                                                                    const LoadOptions& options = {});
  virtual ~NativeModel() = default;
  virtual const std::vector<IoInfo>& inputs() const = 0;
  virtual const std::vector<IoInfo>& outputs() const = 0;
  virtual const Graph& graph() const = 0;  // after the passes
  // What the load has to say about how this model will run here, one line each (a quantized
  // model whose int8 convolutions stay float on this processor); empty for most.
  virtual const std::vector<std::string>& notes() const = 0;
};

class Backend;

struct SessionOptions {
  int threads = 1;  // the CPU backend's thread budget (OpenMP team) for this session
  // Keep 4-D activations channels-last between convolutions (fast). Off: every tensor stays plain
  // NCHW (a reference for tests of the layout logic; slow).
  bool channels_last = true;
  // Concat in place (exec/plan_concat.cpp, CPU-only plans, not in a model loaded with kBf16): producers write their
  // part of a Concat's output themselves. Off: every Concat copies (a reference for tests).
  bool concat_in_place = true;
  // The most working memory (arena, scratch and outputs) a run may need; a plan that needs more is
  // an error naming both figures instead of an allocation that takes the machine down.
  // 0: the machine's physical memory.
  size_t memory_limit_bytes = 0;
  // Time per node, printed when the session ends: the slowest `profile_rows` (0: all) and per op
  // type; -1: not timed.
  int profile_rows = -1;
  // Record a plan's device steps once and replay them every run (CUDA graphs) where they run back
  // to back on one device stream (exec/graph_region.h); off: every kernel launched one by one.
  bool cuda_graphs = true;
  // Backends in order of preference (backend.h): each node runs on the first that supports it.
  // The CPU backend runs the rest; it is added last when missing. Empty: the CPU alone.
  std::vector<std::shared_ptr<const Backend>> backends;
  // --precision fp16: float tensors in the memory of a backend that prefers fp16 (CUDA) are
  // stored and computed there in fp16, converted in the copies to and from the host; inputs and
  // outputs stay float32 (exec::PlanOptions::device_fp16). No effect on the CPU alone.
  bool device_fp16 = false;
};

// Where a plan put the model's nodes, for `streamdet model-info` and the tests.
struct PlanSummary {
  struct BackendRow {
    std::string name, description;
    std::string layout, precision;  // its layout preference, what its float tensors are stored as: "NHWC", "float16"
    int steps = 0;             // kernels it runs (copies not counted)
    size_t arena_bytes = 0;    // its share of the plan's activation memory
    size_t scratch_bytes = 0;
  };
  struct StepRow {
    std::string label;         // "Conv node 'x' (opset 17)", "copy to cpu", "layout conversion"
    std::string backend;
    std::string implementation;
    bool copy = false;
  };
  std::vector<BackendRow> backends;
  std::vector<StepRow> steps;
  int copies = 0;              // copy steps between backends' memory per run
  // Whether the device steps are recorded and replayed as one graph (SessionOptions::cuda_graphs):
  // "steps 2-40 recorded on cuda:0 once, replayed every run", or "none: <why>", or "off".
  std::string graph;
};

class NativeSession {
 public:
  static Result<std::unique_ptr<NativeSession>> create(std::shared_ptr<const NativeModel> model,
                                                       const SessionOptions& options = {});
  virtual ~NativeSession() = default;
  // inputs in the model's input order. outputs are resized/reused; no allocation in steady state
  // once a plan for these input shapes exists.
  Status run(std::span<const TensorRef> inputs, std::vector<HostTensor>& outputs) { return run(inputs, outputs, RunOptions{}); }

  // What a caller that works on the device around the run (docs/gpu.md, "Frames on the GPU")
  // tells one run. Bit i of a mask is input or output i (the first 64 of each).
  struct RunOptions {
    // Input i was written at device_input(i) for this run (on its stream, or finished before the
    // call): the plan's upload of it is skipped and the staging is not touched. Its TensorRef
    // gives the dtype and shape as usual; its data is not read (may be nullptr). An input that
    // cannot be bound (device_input says why) is an error.
    uint64_t inputs_on_device = 0;
    // Output i is read on the device (device_output(i)) and not on the host: its copy to the host
    // is skipped and outputs[i] is left as it was (stale: neither resized nor written). Where the
    // output has no device copy to skip (device_output(i).data is nullptr: computed on the host,
    // or its host buffer is shared with an output still wanted there), it is copied as usual.
    uint64_t outputs_on_device = 0;
  };
  // Recordings (CUDA graphs) are per plan and per set of skipped copies actually used: a run that
  // skips an upload never replays a recording that makes it.
  virtual Status run(std::span<const TensorRef> inputs, std::vector<HostTensor>& outputs, const RunOptions& options) = 0;

  // Where the plan for inputs of `input_shapes` reads input `i` on a device: the destination of
  // its upload copy, the plan's first device step on it. A caller writes the input there (in that
  // dtype and layout: float16 where the plan stores fp16, always the input's own NCHW-like
  // layout, since the copy never transposes) and runs with RunOptions::inputs_on_device. Plans
  // the shapes (as run() would) and sizes the session's memory for them. Valid until a run or a
  // call with other shapes. data nullptr (why_not says why) where nothing can be bound: no
  // device, the input read on the host (a CPU step) or by several steps, its place overwritten
  // earlier in the run, an input needed while planning.
  struct DeviceInput {
    void* data = nullptr;
    DType dtype = DType::kUndefined;
    Shape shape;
    std::string backend;    // "cuda:0"
    void* stream = nullptr;  // the session's stream there (cudaStream_t): work queued on it runs before the run's
    std::string why_not;
  };
  virtual Result<DeviceInput> device_input(size_t i, const std::vector<Shape>& input_shapes) = 0;

  // Where input `i` of `bytes` can be written so that run() uploads it from there without copying
  // it first: the session's page-locked staging for that input (nullptr where the session has no
  // device with staging, or does not stage inputs). Valid until a run with a larger input `i`, or
  // another call with more bytes; pass it as that input's data to run().
  virtual Result<void*> input_staging(size_t i, size_t bytes) = 0;

  // Where output `i` of the last run lies in a device's memory (the source of the copy that
  // brought it to the host), for a postprocess that reads it there (docs/gpu.md, "Frames on the
  // GPU"). Valid until the next run; the device's work for it is done (run() waits). nullptr data
  // when the output was computed on the host (no device, or its last step ran on the CPU). dtype:
  // what the plan stores there, float16 where it stores fp16 (SessionOptions::device_fp16). The
  // host copy is made unless the run skipped it (RunOptions::outputs_on_device).
  struct DeviceOutput {
    const void* data = nullptr;
    DType dtype = DType::kUndefined;
    Shape shape;
    std::string backend;  // the device backend's name ("cuda:0")
  };
  virtual Result<DeviceOutput> device_output(size_t i) const = 0;
  // Output `i` of the last run on the host, into `out`: where that run skipped its copy
  // (RunOptions::outputs_on_device), the copy is made now (the plan's own, converting fp16), for
  // a caller that needs it after all (a decode on the device that failed). Until the next run.
  virtual Status output_to_host(size_t i, HostTensor& out) = 0;

  struct MemoryStats {
    size_t arena_bytes = 0;         // the shared arena of the last plan run
    size_t intermediate_bytes = 0;  // what its intermediate tensors would take unshared
    size_t plans = 0;               // input shape sets planned so far
  };
  virtual MemoryStats memory_stats() const = 0;
  // Plans the model for these inputs (as run() would, kept for later runs) and says where each
  // step runs. Inputs that must be known when planning (plan_time_inputs) are not supported here.
  virtual Result<PlanSummary> plan_summary(const std::vector<Shape>& input_shapes) = 0;
};

}  // namespace sd::native
