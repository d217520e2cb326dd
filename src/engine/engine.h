// The engine interface: a loaded model (weights shared, immutable after load) that hands out
// execution contexts, one per inference worker. Backends live in their own folders
// (engine/opencv, engine/native) and are picked at run time by name (engine/engine_factory.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "engine/gpu_detect_output.h"
#include "engine/gpu_frame_input.h"

namespace sd {

struct EngineCapabilities {
  bool dynamic_input_size = false;  // accepts any H, W (multiples of the stride)
  bool dynamic_batch = false;       // accepts N > 1 in one call
  std::string device = "cpu";       // "cpu", "cuda:0", ...
  // What the engine has to say about running this model here, one line each (printed once when
  // the model is loaded): e.g. a quantized model whose int8 convolutions stay float.
  std::vector<std::string> notes;
};

// How an engine is loaded: on which device its contexts run.
struct EngineOptions {
  // --device: auto (the GPU when one is usable, else the CPU), cpu, cuda (device 0) or cuda:N.
  std::string device = "auto";
  // --precision: auto (fp16 on a CUDA GPU, float32 on the CPU), fp32, fp16 (the GPU's tensors in
  // fp16; refused on the CPU), bf16 (the native engine's CPU convolutions in bf16, refused where
  // the CPU has no bf16 instructions).
  std::string precision = "auto";
  // --cuda-graphs: the native engine replays a plan's GPU work as a CUDA graph (SessionOptions).
  bool cuda_graphs = true;
};

struct ContextOptions {
  int threads = 0;  // 0: the engine's default
  // --engine-profile: print the time per node at the end of the context's life, the slowest
  // `profile_rows` first (0: every node), and per op type; -1: off. Engines that cannot refuse it.
  int profile_rows = -1;
  // The memory the context's working set may take (bytes; 0: the machine's physical memory). A
  // run whose input would need more fails before allocating (kModel).
  uint64_t memory_limit_bytes = 0;
};

// Runs the model. Not thread-safe: one context per worker thread.
class InferenceContext {
 public:
  virtual ~InferenceContext() = default;
  // input: NCHW float32, N >= 1. outputs are resized to the model's outputs, in output_info order.
  // Outputs keep their buffers between calls (no allocation in steady state).
  virtual Status infer(const TensorView& input, std::vector<Tensor>& outputs) = 0;
  // Frames letterboxed on the context's GPU into its input (gpu_frame_input.h); nullptr where the
  // context cannot (the CPU, the OpenCV engine, a build without CUDA). Owned by the context.
  virtual GpuFrameInput* gpu_frame_input() { return nullptr; }
  // The last run's detection head decoded and NMS'd on the context's GPU (gpu_detect_output.h);
  // nullptr where the context cannot. Owned by the context.
  virtual GpuDetectOutput* gpu_detect_output() { return nullptr; }
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  virtual const std::vector<TensorInfo>& inputs() const = 0;
  virtual const std::vector<TensorInfo>& outputs() const = 0;
  virtual EngineCapabilities capabilities() const = 0;
  virtual Result<std::unique_ptr<InferenceContext>> create_context(const ContextOptions& options) = 0;
};

}  // namespace sd
