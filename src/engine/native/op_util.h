// Small helpers shared by the ops of every backend (the CPU kernels, the CUDA ones): axis
// normalisation, broadcasting, reading constant inputs, and making OpSchemas from kernel classes.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "engine/native/op_registry.h"

namespace sd::native::ops {

inline Result<int> normalize_axis(int64_t axis, int rank, const OpContext& ctx) {
  if (axis < -rank || axis >= std::max(rank, 1))
    return fail(ErrorCode::kModel, ctx.describe() + ": axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// Numpy broadcasting of two shapes; an error names the node.
Result<Shape> broadcast_shapes(const Shape& a, const Shape& b, const OpContext& ctx);

// Strides (in elements) of `in` broadcast to `out` (rank of out; 0 where broadcast).
std::array<int64_t, Shape::kMaxRank> broadcast_strides(const Shape& in, const Shape& out);

// The values of input i, which must be known at plan time (a constant or folded).
Result<std::vector<int64_t>> constant_ints(const OpContext& ctx, size_t i, const char* what);
inline bool has_input(const OpContext& ctx, size_t i) {
  return i < ctx.inputs.size() && ctx.inputs[i].dtype != DType::kUndefined;
}

Result<std::vector<ValueType>> one_output(DType dtype, const Shape& shape);
// The shape of a Concat of the inputs along the node's "axis" (Concat, Bf16Concat): equal ranks,
// equal dims off the axis, else a model error naming the shapes.
Result<Shape> concat_shape(const OpContext& ctx);

// Kernels read several inputs as one element type: inputs `which` (those present; all of them
// when empty) must have input `like`'s type, else a model error naming both (the fuzzer found
// a Sum of int64 and int32 reading past its second input). `scalar`: each must also hold at
// least one element (read as [0]: Clip's bounds, Pad's value, Range's arguments).
Status same_dtype(const OpContext& ctx, std::initializer_list<size_t> which = {}, size_t like = 0, bool scalar = false);
// Input i, when present, has type `want`.
Status input_dtype_is(const OpContext& ctx, size_t i, DType want);

inline int64_t shape_numel(const Shape& s) { return s.numel(); }

// Row-major strides of a shape.
inline std::array<int64_t, Shape::kMaxRank> contiguous_strides(const Shape& s) {
  std::array<int64_t, Shape::kMaxRank> st{};
  int64_t acc = 1;
  for (int i = s.rank - 1; i >= 0; --i) {
    st[static_cast<size_t>(i)] = acc;
    acc *= s[i];
  }
  return st;
}

// An OpSchema for opsets [min_opset, max_opset] needing at least `min_inputs` inputs.
inline OpSchema make_schema(const char* name, InferFn infer, KernelFactory create, int min_inputs = 1, int min_opset = 1,
                            int max_opset = 99) {
  OpSchema s;
  s.op_type = name;
  s.min_inputs = min_inputs;
  s.infer = std::move(infer);
  s.create = std::move(create);
  s.min_opset = min_opset;
  s.max_opset = max_opset;
  return s;
}

template <class K>
KernelFactory make_factory() {
  return [](const OpContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    auto k = std::make_unique<K>();
    SD_TRY(k->init(ctx));
    return std::unique_ptr<Kernel>(std::move(k));
  };
}

// Slice's output shape, and per dim the first input index and the step (ONNX's clamping rules;
// axes as given, so remapped by the planner for channels-last tensors).
struct SliceParams {
  Shape out;
  std::array<int64_t, Shape::kMaxRank> start{}, step{};
};
Result<SliceParams> slice_params(const OpContext& ctx);

void register_elementwise_ops(OpRegistry& r);
void register_shape_ops(OpRegistry& r);
void register_data_ops(OpRegistry& r);
void register_misc_ops(OpRegistry& r);
void register_bin_expectation_op(OpRegistry& r);  // internal: passes::fuse_bin_expectation
void register_quant_ops(OpRegistry& r);           // QuantizeLinear & co. (cpu/quant_ops.cpp)
void register_int8_table_ops(OpRegistry& r);      // Int8Table, Int8AddTables (cpu/int8_table_ops.cpp)
void register_bf16_concat_op(OpRegistry& r);      // Bf16Concat, internal (cpu/concat_bf16.cpp)
void register_concat_planes_op(OpRegistry& r);    // ConcatPlanes, internal (cpu/concat_planes.cpp)

}  // namespace sd::native::ops
