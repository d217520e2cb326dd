// How ops plug into the native engine. An op is an OpSchema: a shape/type inference function and
// a kernel factory. Kernels are created per execution plan, i.e. for CONCRETE input shapes
// (a model with dynamic H/W/batch is planned again for each new input shape and the plans are
// cached), so a kernel may precompute everything (oneDNN primitives, scratch buffers, broadcast
// strides) in its factory and must not allocate in run().
//
// Ops register through explicit functions (register_*_ops below), called once by
// builtin_op_registry(): static initializers in a static library would be dropped by the linker.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "engine/native/graph.h"
#include "engine/native/host_tensor.h"

namespace sd::native {

struct ValueType {
  DType dtype = DType::kUndefined;  // kUndefined for an omitted optional input
  Shape shape;                      // concrete at plan time
};

// What a kernel factory / inference function sees of a node.
struct OpContext {
  const Node& node;
  int opset;
  std::span<const ValueType> inputs;              // one per node input
  std::span<const HostTensor* const> constants;   // the input's value when known at plan time, else nullptr
  std::span<const ValueType> outputs;             // filled for kernel factories; empty for inference
  std::string describe() const;                   // "Slice node 'x' (opset 17)" for error messages
};

class BackendStream;

// Execution settings shared by the kernels of one context.
struct ExecContext {
  int threads = 1;  // the context's thread budget (parallel.h splits loops over it)
  // Scratch shared by the kernels of a session (they run one at a time), 64-byte aligned, at
  // least the largest Kernel::scratch_bytes() of the plan, in the kernel's backend's memory.
  unsigned char* scratch = nullptr;
  // The kernel's backend's stream of this session (backend.h); nullptr outside a session.
  BackendStream* stream = nullptr;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // inputs/outputs follow the node's order; an omitted optional input has data == nullptr.
  // Output buffers are provided by the executor with the shapes inference returned.
  virtual Status run(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs,
                     const ExecContext& ctx) = 0;
  // Temporary memory the kernel needs during run() (ExecContext::scratch).
  virtual size_t scratch_bytes() const { return 0; }
  // Which implementation runs (e.g. oneDNN's "brg:avx512_core"), for the engine profile; empty
  // when the op has one.
  virtual std::string implementation() const { return {}; }
};

// Runs a kernel once outside a session (constant folding, plan-time conversions), with scratch.
Status run_once(Kernel& kernel, std::span<const TensorRef> inputs, std::span<const TensorRef> outputs);

using InferFn = std::function<Result<std::vector<ValueType>>(const OpContext&)>;
using KernelFactory = std::function<Result<std::unique_ptr<Kernel>>(const OpContext&)>;

struct OpSchema {
  std::string op_type;
  int min_opset = 1;    // versions of the op this schema implements (ONNX default domain)
  int max_opset = 99;
  int min_inputs = 1;   // inputs that must be present (not omitted) for any use of the op
  InferFn infer;
  KernelFactory create;
};

// Shapes inference produced: no negative dims, not absurdly large (a malformed model must not
// make the planner allocate terabytes).
Status check_output_types(const std::vector<ValueType>& types, const std::string& what);

// Constant folding (at load and at plan time) is an optimisation: it stores the node's result in
// memory for the model's lifetime. A node whose outputs are larger than this, or that would push
// the folded total past kFoldTotalBudgetBytes, is left to run as a normal step instead, whose
// memory the session's arena accounts for (and its memory limit bounds).
inline constexpr size_t kFoldNodeLimitBytes = size_t{64} << 20;
inline constexpr size_t kFoldTotalBudgetBytes = size_t{256} << 20;
size_t total_bytes(const std::vector<ValueType>& types);
std::string mib_text(size_t bytes);  // "97 MiB", rounded up
// Every output has zero elements: there is nothing to compute, and the node's kernel is never
// built (kernels size tables by their output's extents: a Resize to 33M x 0 would build a 33M
// entry table for an empty tensor).
bool all_outputs_empty(const std::vector<ValueType>& types);  // ignores kUndefined slots

// A node's inputs against its schema: enough of them, the required ones not omitted.
Status check_arity(const OpSchema& schema, const Node& node, const std::string& what);

class OpRegistry {
 public:
  void add(OpSchema schema);
  // nullptr when no schema covers (op_type, opset).
  const OpSchema* find(std::string_view op_type, int opset) const;
  std::vector<std::string> op_types() const;  // sorted, for docs and conformance test selection

 private:
  std::unordered_map<std::string, std::vector<OpSchema>> ops_;
};

// Own vectorized kernels (cpu/): elementwise, shape and data movement, reductions, ...
void register_cpu_ops(OpRegistry& registry);
// oneDNN-backed ops (cpu/dnnl_*.cpp): Conv, ConvTranspose, MatMul, Gemm, pooling, ...
void register_dnnl_ops(OpRegistry& registry);
// Every op the engine supports (both of the above), built once.
const OpRegistry& builtin_op_registry();

}  // namespace sd::native
