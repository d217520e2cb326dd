// The planner's node by node part (planner.h): shape inference, constant folding, and the ops that
// need no layout decision (the plain path, Reshape-like aliases, a Split into contiguous parts);
// plan_node() sends the layout-sensitive ones to plan_layout.cpp.
#include <set>

#include "core/human_bytes.h"
#include "core/memory_budget.h"
#include "engine/native/exec/planner.h"
#include "engine/native/passes/passes.h"

namespace sd::native::exec {
namespace {

OpClass classify(const std::string& op) {
  static const std::set<std::string> unary = {"Sigmoid", "Relu", "LeakyRelu", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs",
                                              "HardSigmoid", "HardSwish", "Clip", "Erf", "Softplus", "Elu", "Identity", "Reciprocal", "Int8Table"};
  static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Int8AddTables"};
  if (op == "Conv" || op == "FusedConv" || op == "Int8Conv") return OpClass::kConv;
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool") return OpClass::kPool;
  if (unary.count(op)) return OpClass::kUnary;
  if (binary.count(op)) return OpClass::kBinary;
  if (op == "Concat" || op == "Bf16Concat") return OpClass::kConcat;
  if (op == "Split") return OpClass::kSplit;
  if (op == "Slice") return OpClass::kSlice;
  if (op == "Resize" || op == "Upsample") return OpClass::kResize;
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") return OpClass::kAlias;
  return OpClass::kOther;
}

}  // namespace

Status Planner::plan_node(const Node& original) {
  const std::string what = g_.describe(original);
  const OpSchema* schema = registry_.find(original.op_type, g_.opset);
  if (!schema) return fail(ErrorCode::kModel, what + ": not supported by the native engine");
  SD_TRY(check_arity(*schema, original, what));
  // Every output the kernel writes gets a buffer, also those the model omits or leaves out.
  filled_.push_back(std::make_unique<Node>(original));
  const Node& n = *filled_.back();
  for (int in : n.inputs)
    if (in >= 0 && !states_[static_cast<size_t>(in)].defined) return fail(ErrorCode::kModel, what + ": an input is not defined");
  // A Split's part left in its input (try_split_views) is read strided by the readers it was left
  // for; any other reads a dense copy.
  {
    Node* fill = filled_.back().get();
    for (size_t k = 0; k < fill->inputs.size(); ++k) {
      const int in = fill->inputs[k];
      if (in < 0 || states_[static_cast<size_t>(in)].pixel_stride == 0 || reads_strided(*fill, k)) continue;
      SD_ASSIGN_OR_RETURN(fill->inputs[k], dense_copy(in));
    }
  }

  // Logical shape inference.
  std::vector<ValueType> lin;
  std::vector<const HostTensor*> lconst;
  bool all_const = true;
  for (int in : n.inputs) {
    if (in < 0) {
      lin.push_back({});
      lconst.push_back(nullptr);
      continue;
    }
    const ValueState& s = states_[static_cast<size_t>(in)];
    lin.push_back(s.logical);
    // A constant stored NHWC is not what the logical kernels expect; they never see it here
    // because constants are only converted for a physical step.
    lconst.push_back(s.constant.get());
    if (!s.constant) all_const = false;
  }
  OpContext lctx{n, g_.opset, lin, lconst, {}};
  auto out_types = schema->infer(lctx);
  if (!out_types) return fail(out_types.error().code, out_types.error().message);
  SD_TRY(check_output_types(*out_types, what));
  if (memory_limit_ != 0 && total_bytes(*out_types) > memory_limit_)
    return fail(ErrorCode::kModel, what + ": its outputs need " + human_bytes(total_bytes(*out_types)) + ", " +
                                       *over_budget(total_bytes(*out_types), memory_limit_));
  if (out_types->size() < n.outputs.size()) out_types->resize(n.outputs.size());
  {
    Node& fill = *filled_.back();
    fill.outputs.resize(out_types->size(), -1);
    for (size_t k = 0; k < fill.outputs.size(); ++k)
      if (fill.outputs[k] < 0) fill.outputs[k] = new_value((*out_types)[k], false);
  }

  OpClass cls = classify(n.op_type);
  // Per-tensor quantization is elementwise: it runs on int8 convolutions' channels-last outputs
  // as they are (per channel, its axis would need remapping: plain).
  if ((n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear") && lin.size() > 1 && lin[1].shape.numel() == 1) cls = OpClass::kUnary;
  const bool shape_only = n.op_type == "Shape" || n.op_type == "Size";
  if (shape_only || all_outputs_empty(*out_types)) return fold(n, *schema, lin, lconst, *out_types);
  if (all_const) {
    const size_t bytes = total_bytes(*out_types);
    if (bytes <= kFoldNodeLimitBytes && folded_bytes_ + bytes <= kFoldTotalBudgetBytes) {
      folded_bytes_ += bytes;
      return fold(n, *schema, lin, lconst, *out_types);
    }
    // Too large to keep as a constant: computed by a step on every run like any other node.
  }

  if (n.op_type == "Split" && try_split_alias(n, *out_types)) return ok();
  switch (cls) {
    case OpClass::kConv:
    case OpClass::kPool: return plan_conv_like(n, lin, lconst, *out_types, cls);
    case OpClass::kUnary:
    case OpClass::kBinary:
    case OpClass::kConcat:
    case OpClass::kSplit:
    case OpClass::kSlice:
    case OpClass::kResize: return plan_layout_aware(n, *schema, lin, lconst, *out_types, cls);
    case OpClass::kAlias: return plan_alias(n, *out_types);
    case OpClass::kOther: break;
  }
  return plan_plain(n, *schema, *out_types);
}

Status Planner::fold(const Node& n, const OpSchema& schema, const std::vector<ValueType>& lin, const std::vector<const HostTensor*>& lconst,
                     const std::vector<ValueType>& out_types) {
  std::vector<ValueType> ins = lin;
  std::vector<const HostTensor*> consts = lconst;
  std::vector<std::shared_ptr<HostTensor>> plain_inputs;
  std::vector<TensorRef> in_refs, out_refs;
  for (size_t k = 0; k < n.inputs.size(); ++k) in_refs.push_back(consts[k] ? consts[k]->ref() : TensorRef{});
  std::vector<std::shared_ptr<HostTensor>> outs;
  for (const auto& t : out_types) {
    outs.push_back(std::make_shared<HostTensor>(t.dtype, t.shape));
    out_refs.push_back(outs.back()->ref());
  }
  if (!all_outputs_empty(out_types)) {  // empty outputs: constants with nothing in them, no kernel
    OpContext ctx{n, g_.opset, ins, consts, out_types};
    SD_ASSIGN_OR_RETURN(auto kernel, schema.create(ctx));
    SD_TRY(run_once(*kernel, in_refs, out_refs));
  }
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    int o = n.outputs[k];
    if (o < 0) continue;
    ValueState& s = states_[static_cast<size_t>(o)];
    s.logical = out_types[k];
    s.constant = outs[k];
    s.defined = true;
  }
  return ok();
}

void Planner::define_outputs(const Node& n, const std::vector<ValueType>& out_types, bool nhwc) {
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    int o = n.outputs[k];
    if (o < 0) continue;
    ValueState& s = states_[static_cast<size_t>(o)];
    s.logical = out_types[k];
    s.nhwc = nhwc && out_types[k].shape.rank == 4;
    s.defined = true;
    s.root = o;
  }
}

Status Planner::gather(const std::vector<int>& ids, std::vector<ValueType>& types, std::vector<const HostTensor*>& consts) {
  for (int v : ids) {
    if (v < 0) {
      types.push_back({});
      consts.push_back(nullptr);
    } else {
      types.push_back(physical_type(v));
      consts.push_back(states_[static_cast<size_t>(v)].constant.get());
    }
  }
  return ok();
}

Status Planner::plan_plain(const Node& n, const OpSchema& schema, const std::vector<ValueType>& out_types) {
  std::vector<int> ins;
  for (int in : n.inputs) {
    SD_ASSIGN_OR_RETURN(int v, as_plain(in));
    ins.push_back(v);
  }
  std::vector<ValueType> types;
  std::vector<const HostTensor*> consts;
  SD_TRY(gather(ins, types, consts));
  if (n.op_type == "Concat") return plan_concat(n, ins, types, consts, out_types, out_types, false);
  OpContext ctx{n, g_.opset, types, consts, out_types};
  SD_ASSIGN_OR_RETURN(auto placed, create_kernel(ctx));
  define_outputs(n, out_types, false);
  return add_step(std::move(placed), ins, types, n.outputs, out_types, g_.describe(n));
}

bool Planner::try_split_alias(const Node& n, const std::vector<ValueType>& out_types) {
  const int in = n.inputs[0];
  const ValueState& src = states_[static_cast<size_t>(in)];
  if (src.nhwc || src.constant || src.input >= 0) return false;
  const Shape& s = src.logical.shape;
  int64_t axis = n.attrs.get_int("axis", 0);
  if (axis < 0) axis += s.rank;
  if (axis < 0 || axis >= s.rank) return false;
  for (int d = 0; d < axis; ++d)
    if (s[d] != 1) return false;
  size_t offset = 0;
  const size_t es = dtype_size(stored_dtype(src.logical.dtype, home_of(in)));  // as its home stores it
  for (size_t k = 0; k < n.outputs.size() && k < out_types.size(); ++k) {
    ValueState& o = states_[static_cast<size_t>(n.outputs[k])];
    o.logical = out_types[k];
    o.defined = true;
    o.root = src.root >= 0 ? src.root : in;
    o.home = home_of(in);
    o.alias_offset = src.alias_offset + offset;
    offset += static_cast<size_t>(out_types[k].shape.numel()) * es;
  }
  use(in, static_cast<int>(steps_.size()));
  return true;
}

Status Planner::plan_alias(const Node& n, const std::vector<ValueType>& out_types) {
  SD_ASSIGN_OR_RETURN(int in, as_plain(n.inputs[0]));
  int o = n.outputs[0];
  ValueState& src = states_[static_cast<size_t>(in)];
  ValueState& s = states_[static_cast<size_t>(o)];
  s.logical = out_types[0];
  s.defined = true;
  if (src.constant) {
    s.constant = std::make_shared<HostTensor>(src.constant->reshaped(out_types[0].shape));
    return ok();
  }
  if (src.input >= 0) s.input = src.input;
  s.root = src.root >= 0 ? src.root : in;
  s.home = home_of(in);
  s.uploaded = src.uploaded;
  s.alias_offset = src.alias_offset;
  use(in, static_cast<int>(steps_.size()));
  return ok();
}

Status Planner::plan_split_sum(const Node& fused) {
  auto fresh = [this] { return new_value(ValueType{}, false); };
  auto scalar = [this](float v) {
    auto t = std::make_shared<HostTensor>(DType::kFloat32, Shape{});
    *t->as<float>() = v;
    const int id = new_value(ValueType{t->dtype(), t->shape()}, false);
    states_[static_cast<size_t>(id)].constant = t;
    states_[static_cast<size_t>(id)].root = -1;
    return id;
  };
  for (const Node& part : passes::split_fused_sum(fused, g_.opset, fresh, scalar)) SD_TRY(plan_node(part));
  return ok();
}

}  // namespace sd::native::exec
