#include "engine/native/quant_params.h"

#include <cmath>
#include <map>

#include "engine/native/op_util.h"

namespace sd::native {
namespace {

// A scale and the zero point that goes with it, as input slots of an op (-1: none).
struct ParamSlots {
  int scale, zero_point;
  const char* what;
};

const std::vector<ParamSlots>* slots_of(const std::string& op) {
  static const std::map<std::string, std::vector<ParamSlots>> table = {
      {"QuantizeLinear", {{1, 2, "output"}}},
      {"DequantizeLinear", {{1, 2, "input"}}},
      {"QLinearConv", {{1, 2, "input"}, {4, 5, "weight"}, {6, 7, "output"}}},
      {"QLinearMatMul", {{1, 2, "A"}, {4, 5, "B"}, {6, 7, "output"}}},
      {"ConvInteger", {{-1, 2, "input"}, {-1, 3, "weight"}}},
      {"MatMulInteger", {{-1, 2, "A"}, {-1, 3, "B"}}},
      {"DynamicQuantizeLinear", {}},
  };
  auto it = table.find(op);
  return it == table.end() ? nullptr : &it->second;
}

bool zero_point_type_ok(const std::string& op, DType t) {
  return t == DType::kInt8 || t == DType::kUInt8 || (op == "DequantizeLinear" && t == DType::kInt32);
}
const char* zero_point_types(const std::string& op) { return op == "DequantizeLinear" ? "int8, uint8 or int32" : "int8 or uint8"; }

std::string onnx_type_name(int32_t t) {
  static const std::map<int32_t, const char*> names = {{1, "float32"}, {2, "uint8"},   {3, "int8"},     {4, "uint16"},  {5, "int16"},
                                                       {6, "int32"},   {7, "int64"},   {9, "bool"},     {10, "float16"}, {11, "float64"},
                                                       {12, "uint32"}, {13, "uint64"}, {16, "bfloat16"}, {17, "float8e4m3fn"},
                                                       {21, "uint4"},  {22, "int4"}};
  auto it = names.find(t);
  return it == names.end() ? "type " + std::to_string(t) : it->second;
}

int64_t axis_of(const Node& n, int rank) {
  int64_t a = n.attrs.get_int("axis", 1);
  return a < 0 ? a + rank : a;
}

}  // namespace

std::string bad_scale(const HostTensor& scale) {
  if (scale.dtype() != DType::kFloat32) return std::string("the scale is ") + dtype_name(scale.dtype()) + ", must be float32";
  const float* s = scale.as<float>();
  for (int64_t i = 0; i < scale.numel(); ++i) {
    if (std::isfinite(s[i]) && s[i] > 0.f) continue;
    const std::string v = std::isnan(s[i]) ? "NaN" : std::isinf(s[i]) ? (s[i] > 0 ? "inf" : "-inf") : s[i] == 0.f ? "0" : std::to_string(s[i]);
    return "scale " + v + (scale.numel() > 1 ? " (element " + std::to_string(i) + " of " + std::to_string(scale.numel()) + ")" : "") +
           ": scales must be positive and finite";
  }
  return "";
}

Result<QdqParams> qdq_params(const OpContext& ctx) {
  const std::string& op = ctx.node.op_type;
  const bool quantize = op == "QuantizeLinear";
  const ValueType& x = ctx.inputs[0];
  const ValueType& scale = ctx.inputs[1];
  if (quantize ? (x.dtype != DType::kFloat32 && x.dtype != DType::kInt32)
               : (x.dtype != DType::kInt8 && x.dtype != DType::kUInt8 && x.dtype != DType::kInt32))
    return fail(ErrorCode::kModel, ctx.describe() + ": the input is " + dtype_name(x.dtype) + (quantize ? ", must be float32" : ", must be int8, uint8 or int32"));
  if (ctx.node.attrs.get_int("block_size", 0) != 0) return fail(ErrorCode::kModel, ctx.describe() + ": blocked quantization (block_size) is not supported");
  if (scale.dtype != DType::kFloat32) return fail(ErrorCode::kModel, ctx.describe() + ": the scale is " + dtype_name(scale.dtype) + ", must be float32");
  QdqParams p;
  const int64_t n = scale.shape.numel();
  if (scale.shape.rank > 1 || (scale.shape.rank == 1 && n != 1) || n == 0) {
    if (scale.shape.rank != 1 || ctx.opset < 13) return fail(ErrorCode::kModel, ctx.describe() + ": the scale " + scale.shape.str() + " must be a scalar or 1-D");
    SD_ASSIGN_OR_RETURN(p.axis, ops::normalize_axis(ctx.node.attrs.get_int("axis", 1), x.shape.rank, ctx));
    if (x.shape[p.axis] != n)
      return fail(ErrorCode::kModel, ctx.describe() + ": " + std::to_string(n) + " scales for axis " + std::to_string(p.axis) + " of dimension " +
                                         std::to_string(x.shape[p.axis]) + " (input " + x.shape.str() + ")");
    p.per_channel = true;
  }
  if (ops::has_input(ctx, 2)) {
    const ValueType& zp = ctx.inputs[2];
    if (!zero_point_type_ok(op, zp.dtype))
      return fail(ErrorCode::kModel, ctx.describe() + ": the zero point is " + dtype_name(zp.dtype) + ", must be " + zero_point_types(op));
    if (zp.shape.numel() != n) return fail(ErrorCode::kModel, ctx.describe() + ": " + std::to_string(n) + " scales but " + std::to_string(zp.shape.numel()) + " zero points");
    if (!quantize && x.dtype != zp.dtype) return fail(ErrorCode::kModel, ctx.describe() + ": the input is " + dtype_name(x.dtype) + ", its zero point " + dtype_name(zp.dtype));
  }
  if (ctx.constants.size() > 1 && ctx.constants[1])
    if (std::string bad = bad_scale(*ctx.constants[1]); !bad.empty()) return fail(ErrorCode::kModel, ctx.describe() + ": " + bad);
  return p;
}

Status check_zero_point_types(const onnx::GraphProto& g, const std::string& what) {
  std::map<std::string, int32_t> types;
  for (const auto& t : g.initializer()) types[t.name()] = t.data_type();
  for (const auto& n : g.node()) {
    const auto* slots = slots_of(n.op_type());
    if (!slots || !(n.domain().empty() || n.domain() == "ai.onnx")) continue;
    for (const ParamSlots& s : *slots) {
      if (s.zero_point >= n.input_size()) continue;
      auto it = types.find(n.input(s.zero_point));
      if (it == types.end()) continue;
      auto dt = dtype_from_onnx(it->second);
      if (dt && zero_point_type_ok(n.op_type(), *dt)) continue;
      return fail(ErrorCode::kModel, what + ": " + n.op_type() + " node '" + n.name() + "': the " + s.what + " zero point '" + it->first + "' is " +
                                         onnx_type_name(it->second) + ", must be " + zero_point_types(n.op_type()));
    }
  }
  return ok();
}

Status check_quantization(const Graph& g, const std::string& what) {
  auto value = [&](const Node& n, int slot) -> const Value* {
    if (slot < 0 || slot >= static_cast<int>(n.inputs.size()) || n.inputs[static_cast<size_t>(slot)] < 0) return nullptr;
    return &g.values[static_cast<size_t>(n.inputs[static_cast<size_t>(slot)])];
  };
  for (const Node& n : g.nodes) {
    const auto* slots = slots_of(n.op_type);
    if (!slots) continue;
    auto bad = [&](const std::string& problem) { return fail(ErrorCode::kModel, what + ": " + g.describe(n) + ": " + problem); };
    for (const ParamSlots& s : *slots) {
      const Value* scale = value(n, s.scale);
      const Value* zp = value(n, s.zero_point);
      if (zp && zp->dtype != DType::kUndefined && !zero_point_type_ok(n.op_type, zp->dtype))
        return bad(std::string("the ") + s.what + " zero point '" + zp->name + "' is " + dtype_name(zp->dtype) + ", must be " + zero_point_types(n.op_type));
      if (scale && scale->constant) {
        if (std::string b = bad_scale(*scale->constant); !b.empty()) return bad(std::string("the ") + s.what + " " + b);
        if (zp && zp->constant && zp->constant->numel() != scale->constant->numel())
          return bad(std::string("the ") + s.what + " scale has " + std::to_string(scale->constant->numel()) + " values, its zero point " +
                     std::to_string(zp->constant->numel()));
      }
    }
    // Per-channel lengths against the axis's dimension, where the quantized tensor's shape is known.
    if (n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear") {
      const Value* x = value(n, 0);
      const Value* scale = value(n, 1);
      if (!x || !scale || !scale->constant || scale->constant->shape().rank != 1 || scale->constant->numel() == 1) continue;
      const Shape xs = x->constant ? x->constant->shape() : x->shape;
      if (!x->constant && !x->shape_known) continue;
      const int64_t axis = axis_of(n, xs.rank);
      if (axis < 0 || axis >= xs.rank) return bad("axis " + std::to_string(n.attrs.get_int("axis", 1)) + " out of range for rank " + std::to_string(xs.rank));
      if (xs[static_cast<int>(axis)] >= 0 && xs[static_cast<int>(axis)] != scale->constant->numel())
        return bad(std::to_string(scale->constant->numel()) + " scales for axis " + std::to_string(axis) + " of dimension " +
                   std::to_string(xs[static_cast<int>(axis)]) + " (input " + xs.str() + ")");
    }
    if (n.op_type == "QLinearConv") {  // weight scales: one or one per output channel
      const Value* w = value(n, 3);
      const Value* ws = value(n, 4);
      if (w && w->constant && ws && ws->constant && ws->constant->numel() != 1 && ws->constant->numel() != w->constant->shape()[0])
        return bad(std::to_string(ws->constant->numel()) + " weight scales for " + std::to_string(w->constant->shape()[0]) + " output channels");
    }
  }
  return ok();
}

}  // namespace sd::native
