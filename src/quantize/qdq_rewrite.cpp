#include "quantize/qdq_rewrite.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <unordered_map>

namespace sd::quant {
namespace {

const std::set<std::string> kQuantizedOps = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                                             "QLinearConv",    "QLinearMatMul",    "ConvInteger",
                                             "MatMulInteger"};

bool default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

int64_t model_opset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (default_domain(o.domain())) return o.version();
  return 1;
}

const onnx::TensorProto* find_init(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

// Float data of an initializer (raw_data or float_data); empty when it is not float or external.
std::vector<float> float_values(const onnx::TensorProto& t) {
  std::vector<float> v;
  if (t.data_type() != onnx::TensorProto::FLOAT || t.data_location() == onnx::TensorProto::EXTERNAL) return v;
  if (!t.raw_data().empty()) {
    v.resize(t.raw_data().size() / sizeof(float));
    std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
  } else {
    v.assign(t.float_data().begin(), t.float_data().end());
  }
  return v;
}

int64_t numel(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  return n;
}

bool float_initializer(const onnx::GraphProto& g, const std::string& name, int min_rank, int max_rank) {
  const onnx::TensorProto* t = find_init(g, name);
  return t && t->data_type() == onnx::TensorProto::FLOAT && t->dims_size() >= min_rank && t->dims_size() <= max_rank &&
         static_cast<int64_t>(float_values(*t).size()) == numel(*t);
}

bool quantizable(const onnx::GraphProto& g, const onnx::NodeProto& n) {
  if (!default_domain(n.domain()) || n.input_size() < 2 || n.output_size() < 1) return false;
  if (find_init(g, n.input(0))) return false;  // a constant input: nothing to calibrate
  if (n.op_type() == "Conv") {
    if (n.input_size() > 2 && !n.input(2).empty() && !float_initializer(g, n.input(2), 1, 1)) return false;
    return float_initializer(g, n.input(1), 3, 5);
  }
  if (n.op_type() == "MatMul") return float_initializer(g, n.input(1), 2, 2);
  return false;
}

// The head rule: a node whose output reaches a model output along some path without another Conv
// or MatMul on it (the box / class prediction convolutions, YOLOv8's DFL) stays float.
bool feeds_output_directly(const onnx::GraphProto& g, const onnx::NodeProto& start,
                           const std::unordered_map<std::string, std::vector<int>>& consumers) {
  std::set<std::string> outputs;
  for (const auto& o : g.output()) outputs.insert(o.name());
  std::vector<std::string> todo(start.output().begin(), start.output().end());
  std::set<std::string> seen(todo.begin(), todo.end());
  while (!todo.empty()) {
    const std::string t = todo.back();
    todo.pop_back();
    if (outputs.count(t)) return true;
    auto it = consumers.find(t);
    if (it == consumers.end()) continue;
    for (int c : it->second) {
      const auto& n = g.node(c);
      if (n.op_type() == "Conv" || n.op_type() == "MatMul") continue;
      for (const auto& o : n.output())
        if (!o.empty() && seen.insert(o).second) todo.push_back(o);
    }
  }
  return false;
}

// Whether tensor t is computed from one of `quantized_conv_outputs` through activation
// ops alone (SiLU as x * Sigmoid(x), Relu, ...): its values are then a function of a quantized
// tensor, and quantizing it again (HeadRule::kInt8Input) costs little. A Softmax (YOLOv8's DFL
// input), a Concat, another convolution: no.
bool from_quantized_conv(const onnx::GraphProto& g, const std::string& t, const std::unordered_map<std::string, int>& producer,
                         const std::set<std::string>& quantized_conv_outputs, int depth = 0) {
  static const std::set<std::string> kActivations = {"Sigmoid", "Mul",         "Relu",     "LeakyRelu", "Clip",
                                                     "HardSigmoid", "HardSwish", "Tanh", "Identity"};
  if (quantized_conv_outputs.count(t)) return true;
  auto it = producer.find(t);
  if (depth > 8 || it == producer.end()) return false;
  const onnx::NodeProto& n = g.node(it->second);
  if (!default_domain(n.domain()) || !kActivations.count(n.op_type())) return false;
  bool any = false;
  for (int k = 0; k < n.input_size(); ++k) {
    const std::string& in = n.input(k);
    if (in.empty() || find_init(g, in)) continue;  // Clip's bounds, a Mul by a constant
    if (!from_quantized_conv(g, in, producer, quantized_conv_outputs, depth + 1)) return false;
    any = true;
  }
  return any;
}

// Rank of a tensor where the model says it (value_info, inputs, outputs) or a Transpose's perm does.
int known_rank(const onnx::GraphProto& g, const std::string& name) {
  auto from = [&](const auto& list) {
    for (const auto& vi : list)
      if (vi.name() == name && vi.type().tensor_type().has_shape()) return vi.type().tensor_type().shape().dim_size();
    return -1;
  };
  for (int r : {from(g.value_info()), from(g.input()), from(g.output())})
    if (r >= 0) return r;
  for (const auto& n : g.node())
    if (n.op_type() == "Transpose" && n.output_size() > 0 && n.output(0) == name)
      for (const auto& a : n.attribute())
        if (a.name() == "perm") return a.ints_size();
  return -1;
}

int64_t int_attr(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}

// Whether the default-domain nodes mean the same at opset 13 once the attributes that became
// inputs (Split's split, Squeeze/Unsqueeze's and ReduceSum's axes) are moved (upgrade_to_opset13).
bool upgradable_to_13(const onnx::GraphProto& g) {
  for (const auto& n : g.node()) {
    if (!default_domain(n.domain())) continue;
    const std::string& op = n.op_type();
    if (op == "If" || op == "Loop" || op == "Scan" || op == "Upsample") return false;
    if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") {
      // Before 13 these flatten to 2-D at `axis` (default 1); the same as 13's only on the last axis.
      const int rank = known_rank(g, n.input(0));
      int64_t axis = int_attr(n, "axis", 1);
      if (rank < 0) return false;
      if (axis < 0) axis += rank;
      if (axis != rank - 1) return false;
    }
  }
  return true;
}

void upgrade_to_opset13(onnx::ModelProto& m) {
  for (auto& o : *m.mutable_opset_import())
    if (default_domain(o.domain())) o.set_version(13);
  onnx::GraphProto& g = *m.mutable_graph();
  for (auto& n : *g.mutable_node()) {
    if (!default_domain(n.domain())) continue;
    const std::string attr = n.op_type() == "Split" ? "split"
                             : (n.op_type() == "Squeeze" || n.op_type() == "Unsqueeze" || n.op_type() == "ReduceSum") ? "axes"
                                                                                                                   : "";
    if (attr.empty()) continue;
    auto* attrs = n.mutable_attribute();
    for (int i = 0; i < attrs->size(); ++i) {
      if (attrs->Get(i).name() != attr) continue;
      onnx::TensorProto t;
      t.set_name(node_label(n) + "_" + attr);
      t.set_data_type(onnx::TensorProto::INT64);
      t.add_dims(attrs->Get(i).ints_size());
      for (int64_t v : attrs->Get(i).ints()) t.add_int64_data(v);
      *g.add_initializer() = t;
      while (n.input_size() < 1) n.add_input("");
      n.add_input(t.name());
      attrs->DeleteSubrange(i, 1);
      break;
    }
  }
}

onnx::TensorProto make_tensor(const std::string& name, int type, const std::vector<int64_t>& dims, const void* data,
                              size_t bytes) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(static_cast<const char*>(data), bytes));
  return t;
}

onnx::NodeProto make_node(const std::string& op, const std::string& name, std::vector<std::string> in,
                          std::vector<std::string> out, int64_t axis = -1) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (auto& s : in) n.add_input(s);
  for (auto& s : out) n.add_output(s);
  if (axis >= 0) {
    auto* a = n.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
  }
  return n;
}

}  // namespace

std::string node_label(const onnx::NodeProto& node) {
  if (!node.name().empty()) return node.name();
  return node.output_size() ? node.output(0) : std::string();
}

void activation_params(Range r, float& scale, uint8_t& zero_point) {
  const double lo = std::min(0.0, static_cast<double>(r.lo)), hi = std::max(0.0, static_cast<double>(r.hi));
  if (!(hi > lo) || !std::isfinite(hi - lo)) {
    scale = 1.0f;
    zero_point = 0;
    return;
  }
  scale = static_cast<float>((hi - lo) / 255.0);
  zero_point = static_cast<uint8_t>(std::clamp(std::nearbyint(-lo / scale), 0.0, 255.0));
}

std::optional<HeadRule> parse_head_rule(const std::string& s) {
  if (s == "int8-input") return HeadRule::kInt8Input;
  if (s == "float") return HeadRule::kFloat;
  return std::nullopt;
}

Result<QuantPlan> plan_quantization(const onnx::ModelProto& model, const std::vector<std::string>& keep_float,
                                    const std::string& what, HeadRule head) {
  const onnx::GraphProto& g = model.graph();
  for (const auto& n : g.node())
    if (kQuantizedOps.count(n.op_type()))
      return fail(ErrorCode::kModel, what + ": already quantized (" + n.op_type() + " node '" + node_label(n) +
                                         "'); quantize the float model it was made from");
  const int64_t opset = model_opset(model);
  if (opset < 10)
    return fail(ErrorCode::kModel, what + ": opset " + std::to_string(opset) + " has no QuantizeLinear (needs 10 or later)");

  std::set<std::string> keep(keep_float.begin(), keep_float.end());
  for (const auto& k : keep) {
    const bool found = std::any_of(g.node().begin(), g.node().end(), [&](const auto& n) { return node_label(n) == k; });
    if (!found) return fail(ErrorCode::kUsage, "--keep-float " + k + ": model " + what + " has no node of that name");
  }
  std::unordered_map<std::string, std::vector<int>> consumers;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& in : g.node(i).input()) consumers[in].push_back(i);

  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& o : g.node(i).output()) producer[o] = i;

  QuantPlan plan;
  std::set<std::string> wanted;
  std::set<std::string> quantized_conv_outputs;  // outputs of the Convs quantized so far (graph order)
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    if (!quantizable(g, n)) continue;
    if (keep.count(node_label(n))) {
      plan.kept_by_option.push_back(node_label(n));
      continue;
    }
    if (feeds_output_directly(g, n, consumers)) {
      if (head == HeadRule::kInt8Input && n.op_type() == "Conv" && from_quantized_conv(g, n.input(0), producer, quantized_conv_outputs)) {
        plan.quantized.push_back(i);
        plan.float_output.push_back(i);
        wanted.insert(n.input(0));
      } else {
        plan.kept_by_rule.push_back(node_label(n));
      }
      continue;
    }
    plan.quantized.push_back(i);
    wanted.insert(n.input(0));
    wanted.insert(n.output(0));
    if (n.op_type() == "Conv") quantized_conv_outputs.insert(n.output(0));
  }
  // Graph order: graph inputs first, then each node's outputs.
  for (const auto& in : g.input())
    if (wanted.count(in.name())) plan.activations.push_back(in.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output())
      if (wanted.count(o)) plan.activations.push_back(o);
  if (opset < 13) {
    plan.upgrade_opset = upgradable_to_13(g);
    plan.per_channel = plan.upgrade_opset;
  }
  return plan;
}

Result<onnx::ModelProto> write_qdq(const onnx::ModelProto& model, const QuantPlan& plan,
                                   const std::map<std::string, Range>& ranges, const std::string& what) {
  onnx::ModelProto out = model;
  if (plan.upgrade_opset) upgrade_to_opset13(out);
  onnx::GraphProto& g = *out.mutable_graph();
  std::vector<onnx::TensorProto> new_inits;

  struct Act {
    float scale;
    uint8_t zero;
    std::string q_in, dq_out;  // what QuantizeLinear reads, what DequantizeLinear writes
    bool produced_by_quantized = false;
  };
  std::set<int> quantized(plan.quantized.begin(), plan.quantized.end());
  // Outputs of the quantized nodes that are quantized themselves (a float_output node's output
  // keeps its name and its float value; a quantized reader of it gets a QDQ pair of its own).
  const std::set<int> float_output(plan.float_output.begin(), plan.float_output.end());
  std::set<std::string> produced;
  for (int i : plan.quantized)
    if (!float_output.count(i)) produced.insert(g.node(i).output(0));
  std::map<std::string, Act> acts;
  for (const auto& t : plan.activations) {
    auto r = ranges.find(t);
    if (r == ranges.end()) return fail(ErrorCode::kInternal, "no calibrated range for tensor '" + t + "'");
    Act a;
    activation_params(r->second, a.scale, a.zero);
    a.produced_by_quantized = produced.count(t) > 0;
    // A quantized node's output: the node writes T_QuantizeLinear_Input and the DequantizeLinear
    // takes over the name T, so every reader (the model's outputs included) reads the QDQ value,
    // as the int8 fold needs (the Conv's output read by its QuantizeLinear alone).
    a.q_in = a.produced_by_quantized ? t + "_QuantizeLinear_Input" : t;
    a.dq_out = a.produced_by_quantized ? t : t + "_DequantizeLinear_Output";
    new_inits.push_back(make_tensor(t + "_scale", onnx::TensorProto::FLOAT, {}, &a.scale, sizeof(float)));
    new_inits.push_back(make_tensor(t + "_zero_point", onnx::TensorProto::UINT8, {}, &a.zero, 1));
    acts[t] = a;
  }
  auto emit_qdq = [&](const std::string& t, google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes) {
    auto it = acts.find(t);
    if (it == acts.end()) return;
    const Act& a = it->second;
    *nodes.Add() = make_node("QuantizeLinear", t + "_QuantizeLinear", {a.q_in, t + "_scale", t + "_zero_point"},
                             {t + "_QuantizeLinear_Output"});
    *nodes.Add() = make_node("DequantizeLinear", t + "_DequantizeLinear",
                             {t + "_QuantizeLinear_Output", t + "_scale", t + "_zero_point"}, {a.dq_out});
  };

  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const auto& in : g.input()) emit_qdq(in.name(), nodes);
  std::map<std::string, std::vector<float>> weight_scales;  // by weight initializer, shared by its users
  for (int i = 0; i < g.node_size(); ++i) {
    onnx::NodeProto n = g.node(i);
    if (quantized.count(i)) {
      const std::string label = node_label(n);
      const Act& x = acts.at(n.input(0));
      n.set_input(0, x.dq_out);
      // Weights: symmetric int8 in [-127, 127] ([-63, 63] with reduce_range), per output
      // channel (axis 0) or per tensor.
      const float qmax = plan.reduce_range ? 63.0f : 127.0f;
      const std::string wname = n.input(1);
      const onnx::TensorProto& w = *find_init(g, wname);
      const bool per_channel = plan.per_channel && n.op_type() == "Conv";
      const int64_t oc = per_channel ? w.dims(0) : 1;
      const std::vector<float> wv = float_values(w);
      const size_t per = wv.size() / static_cast<size_t>(oc);
      if (!weight_scales.count(wname)) {
        std::vector<float> scales(static_cast<size_t>(oc));
        std::vector<int8_t> q(wv.size());
        for (int64_t c = 0; c < oc; ++c) {
          float amax = 0;
          for (size_t k = 0; k < per; ++k) amax = std::max(amax, std::fabs(wv[static_cast<size_t>(c) * per + k]));
          const float s = amax > 0 && std::isfinite(amax) ? amax / qmax : 1.0f;
          scales[static_cast<size_t>(c)] = s;
          for (size_t k = 0; k < per; ++k) {
            const size_t j = static_cast<size_t>(c) * per + k;
            q[j] = static_cast<int8_t>(std::clamp(std::nearbyint(wv[j] / s), -qmax, qmax));
          }
        }
        std::vector<int64_t> wdims(w.dims().begin(), w.dims().end());
        std::vector<int64_t> sdims;
        if (per_channel) sdims = {oc};
        std::vector<int8_t> zeros(static_cast<size_t>(oc), 0);
        new_inits.push_back(make_tensor(wname + "_quantized", onnx::TensorProto::INT8, wdims, q.data(), q.size()));
        new_inits.push_back(make_tensor(wname + "_scale", onnx::TensorProto::FLOAT, sdims, scales.data(), scales.size() * 4));
        new_inits.push_back(make_tensor(wname + "_zero_point", onnx::TensorProto::INT8, sdims, zeros.data(), zeros.size()));
        *nodes.Add() = make_node("DequantizeLinear", wname + "_DequantizeLinear",
                                 {wname + "_quantized", wname + "_scale", wname + "_zero_point"},
                                 {wname + "_DequantizeLinear_Output"}, per_channel ? 0 : -1);
        weight_scales[wname] = scales;
      }
      n.set_input(1, wname + "_DequantizeLinear_Output");
      // Bias: int32 at input scale x weight scale, zero point 0 (one per node: it depends on x's scale).
      if (n.op_type() == "Conv" && n.input_size() > 2 && !n.input(2).empty()) {
        const onnx::TensorProto& b = *find_init(g, n.input(2));
        const std::vector<float> bv = float_values(b);
        const std::vector<float>& ws = weight_scales[wname];
        std::vector<float> bs(ws.size());
        std::vector<int32_t> bq(bv.size());
        for (size_t c = 0; c < ws.size(); ++c) bs[c] = x.scale * ws[c];
        for (size_t c = 0; c < bv.size(); ++c) {
          const double v = std::nearbyint(static_cast<double>(bv[c]) / bs[ws.size() == 1 ? 0 : c]);
          bq[c] = static_cast<int32_t>(std::clamp(v, -2147483647.0, 2147483647.0));
        }
        const std::string bname = label + "_bias";
        std::vector<int64_t> sdims;
        if (ws.size() > 1) sdims = {static_cast<int64_t>(ws.size())};
        std::vector<int32_t> zeros(ws.size(), 0);
        new_inits.push_back(make_tensor(bname + "_quantized", onnx::TensorProto::INT32, {static_cast<int64_t>(bv.size())},
                                        bq.data(), bq.size() * 4));
        new_inits.push_back(make_tensor(bname + "_scale", onnx::TensorProto::FLOAT, sdims, bs.data(), bs.size() * 4));
        new_inits.push_back(make_tensor(bname + "_zero_point", onnx::TensorProto::INT32, sdims, zeros.data(), zeros.size() * 4));
        *nodes.Add() = make_node("DequantizeLinear", bname + "_DequantizeLinear",
                                 {bname + "_quantized", bname + "_scale", bname + "_zero_point"},
                                 {bname + "_DequantizeLinear_Output"}, ws.size() > 1 ? 0 : -1);
        n.set_input(2, bname + "_DequantizeLinear_Output");
      }
      if (acts.count(n.output(0)) && acts.at(n.output(0)).produced_by_quantized) n.set_output(0, acts.at(n.output(0)).q_in);
    }
    *nodes.Add() = n;
    for (const auto& o : g.node(i).output()) emit_qdq(o, nodes);
  }
  g.mutable_node()->Swap(&nodes);
  for (auto& t : new_inits) *g.add_initializer() = std::move(t);
  // Float weights and biases no node reads any more.
  std::set<std::string> used;
  for (const auto& n : g.node())
    for (const auto& in : n.input()) used.insert(in);
  for (const auto& o : g.output()) used.insert(o.name());
  auto* inits = g.mutable_initializer();
  inits->erase(std::remove_if(inits->begin(), inits->end(), [&](const onnx::TensorProto& t) { return !used.count(t.name()); }),
               inits->end());
  (void)what;
  return out;
}

}  // namespace sd::quant
