// An execution plan: the model specialised to concrete input shapes. Shape inference runs node by
// node; whatever can be computed from constants and shapes is computed now (Shape -> Gather ->
// Concat -> Reshape chains vanish); 4-D activations between convolutions are kept channels-last
// (NHWC) with the layout-neutral ops between them working on the physical layout; intermediate
// tensors share one arena by lifetime; Reshape-like ops alias their input.
// build_plan() is the Planner of planner.h, its parts by concern in plan*.cpp.
#pragma once

#include <memory>
#include <vector>

#include <span>

#include "engine/native/backend.h"
#include "engine/native/op_registry.h"
#include "engine/native/session.h"

namespace sd::native::exec {

struct BufferRef {
  enum class Kind { kArena, kInput, kConstant, kNone } kind = Kind::kNone;
  int backend = 0;          // kArena: whose arena (index into Plan::backends)
  size_t offset = 0;        // kArena
  int input = -1;           // kInput: index among the graph inputs (host memory)
  const void* constant = nullptr;  // kConstant: in the memory of the step that reads it
};

struct Step {
  std::unique_ptr<Kernel> kernel;
  int backend = 0;                           // index into Plan::backends
  bool copy = false;                         // a copy between two backends' memory
  std::vector<BufferRef> in_bufs, out_bufs;
  std::vector<TensorRef> in_refs, out_refs;  // data pointers filled per run
  std::string label;                         // "Conv node 'x'" for errors and profiles
};

// What a plan needs of each backend's memory.
struct BackendMemory {
  size_t arena_bytes = 0;
  size_t scratch_bytes = 0;  // the largest scratch a kernel of this backend needs
  // What float32 tensors are stored as in its memory: float16 where the plan was made with
  // device_fp16 and the backend prefers it, else float32.
  DType float_storage = DType::kFloat32;
};

struct Plan {
  std::vector<Shape> input_shapes;
  std::vector<const Backend*> backends;  // as given to build_plan (the session owns them)
  std::vector<BackendMemory> memory;     // one per backend
  std::vector<Step> steps;
  size_t arena_bytes = 0;               // all backends' arenas together
  size_t scratch_bytes = 0;             // all backends' scratch together
  size_t total_intermediate_bytes = 0;  // what the tensors would take without sharing
  int copies = 0;                       // copy steps between backends
  std::vector<BufferRef> output_bufs;   // always host memory
  std::vector<ValueType> output_types;
  std::vector<std::shared_ptr<HostTensor>> keep_alive;  // folded and converted constants
  std::vector<DeviceBuffer> device_constants;           // constants uploaded to other backends
  int64_t runs = 0;                     // runs so far (the native profile skips the first)
};

struct PlanOptions {
  // Keep 4-D activations channels-last between convolutions where the backend prefers it.
  bool channels_last = true;
  // 0: none. A node whose outputs alone exceed it is refused while planning, before its kernel is
  // built (kernels size tables by their output: a Resize to 6e9 elements would spend seconds
  // preparing a plan that can never run).
  size_t memory_limit_bytes = 0;
  // --precision fp16: float32 tensors in the memory of a backend whose preferred_float() is
  // float16 are stored and computed there in fp16 (backend.h); copies to and from the host
  // convert. The host's tensors, the inputs and the outputs stay float32.
  bool device_fp16 = false;
  // The session's thread budget (SessionOptions::threads), told to convolutions (kPlanThreads).
  int threads = 1;
  // Concat in place (exec/plan_concat.cpp): producers write their part of a Concat's output
  // themselves, the Concat copies only the rest (or has no step). CPU-only plans. Off: every
  // Concat copies (the reference the tests compare with bit for bit).
  bool concat_in_place = true;
};

// `backends` in order of preference: each node goes to the first that supports it; one of them
// must be the host's (the CPU backend), which runs the rest. `fixed_inputs[i]`, when set, is the
// value of graph input i baked into the plan (inputs that set shapes, axes or weights: see
// plan_time_inputs()).
Result<std::unique_ptr<Plan>> build_plan(const Graph& g, const std::vector<ValueType>& inputs, const OpRegistry& registry,
                                         std::span<const Backend* const> backends,
                                         const std::vector<const HostTensor*>& fixed_inputs = {}, const PlanOptions& options = {});

// Which graph inputs feed a slot that must be known when planning (a Reshape's shape, Slice's
// starts, Resize's scales, a Conv's weights, ...). Real models carry constants there; ONNX's
// conformance tests feed them as inputs. Their values become part of the plan's key.
std::vector<bool> plan_time_inputs(const Graph& g);

}  // namespace sd::native::exec
