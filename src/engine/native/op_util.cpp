#include "engine/native/op_util.h"

namespace sd::native::ops {

Result<Shape> broadcast_shapes(const Shape& a, const Shape& b, const OpContext& ctx) {
  Shape out;
  out.rank = std::max(a.rank, b.rank);
  for (int i = 0; i < out.rank; ++i) {
    int ia = a.rank - out.rank + i, ib = b.rank - out.rank + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return fail(ErrorCode::kModel, ctx.describe() + ": shapes " + a.str() + " and " + b.str() + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::array<int64_t, Shape::kMaxRank> broadcast_strides(const Shape& in, const Shape& out) {
  std::array<int64_t, Shape::kMaxRank> st{};
  auto cs = contiguous_strides(in);
  for (int i = 0; i < out.rank; ++i) {
    int j = in.rank - out.rank + i;
    st[static_cast<size_t>(i)] = (j < 0 || in[j] == 1) ? 0 : cs[static_cast<size_t>(j)];
  }
  return st;
}

Result<std::vector<int64_t>> constant_ints(const OpContext& ctx, size_t i, const char* what) {
  if (i >= ctx.constants.size() || !ctx.constants[i])
    return fail(ErrorCode::kUnsupported, ctx.describe() + ": its " + std::string(what) +
                                             " input must be known when the model is planned (computed from data here)");
  return ctx.constants[i]->to_int64_vector();
}

Status same_dtype(const OpContext& ctx, std::initializer_list<size_t> which, size_t like, bool scalar) {
  auto check = [&](size_t i) -> Status {
    if (!has_input(ctx, i)) return ok();
    if (ctx.inputs[i].dtype != ctx.inputs[like].dtype)
      return fail(ErrorCode::kModel, ctx.describe() + ": input " + std::to_string(i) + " is " + dtype_name(ctx.inputs[i].dtype) + ", input " +
                                         std::to_string(like) + " is " + dtype_name(ctx.inputs[like].dtype) + " (they must match)");
    if (scalar && ctx.inputs[i].shape.numel() < 1) return fail(ErrorCode::kModel, ctx.describe() + ": input " + std::to_string(i) + " is empty");
    return ok();
  };
  if (like >= ctx.inputs.size()) return fail(ErrorCode::kModel, ctx.describe() + ": missing input " + std::to_string(like));
  if (which.size() == 0) {
    for (size_t i = 0; i < ctx.inputs.size(); ++i) SD_TRY(check(i));
  } else {
    for (size_t i : which) SD_TRY(check(i));
  }
  return ok();
}

Status input_dtype_is(const OpContext& ctx, size_t i, DType want) {
  if (!has_input(ctx, i) || ctx.inputs[i].dtype == want) return ok();
  return fail(ErrorCode::kModel, ctx.describe() + ": input " + std::to_string(i) + " is " + dtype_name(ctx.inputs[i].dtype) + ", not " +
                                     dtype_name(want));
}

Result<std::vector<ValueType>> one_output(DType dtype, const Shape& shape) {
  return std::vector<ValueType>{ValueType{dtype, shape}};
}

Result<Shape> concat_shape(const OpContext& ctx) {
  if (ctx.inputs.empty()) return fail(ErrorCode::kModel, ctx.describe() + ": needs inputs");
  Shape out = ctx.inputs[0].shape;
  SD_ASSIGN_OR_RETURN(int axis, normalize_axis(ctx.node.attrs.get_int("axis", 0), out.rank, ctx));
  out[axis] = 0;
  for (const auto& in : ctx.inputs) {
    if (in.shape.rank != out.rank) return fail(ErrorCode::kModel, ctx.describe() + ": inputs of different ranks");
    for (int d = 0; d < out.rank; ++d)
      if (d != axis && in.shape[d] != out[d])
        return fail(ErrorCode::kModel, ctx.describe() + ": input shapes " + ctx.inputs[0].shape.str() + " and " + in.shape.str() + " differ off the axis");
    out[axis] += in.shape[axis];
  }
  return out;
}

}  // namespace sd::native::ops
