#include "engine/native/passes/passes.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace sd::native::passes {

std::vector<int> use_counts(const Graph& g) {
  std::vector<int> uses(g.values.size(), 0);
  for (const Node& n : g.nodes)
    for (int in : n.inputs)
      if (in >= 0) uses[static_cast<size_t>(in)]++;
  for (int o : g.outputs) uses[static_cast<size_t>(o)]++;
  return uses;
}

namespace {

bool is_const(const Graph& g, int v) { return v >= 0 && g.values[static_cast<size_t>(v)].constant.has_value(); }

// The node producing each value (-1 for inputs and constants).
std::vector<int> producers(const Graph& g) {
  std::vector<int> p(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int o : g.nodes[i].outputs)
      if (o >= 0) p[static_cast<size_t>(o)] = static_cast<int>(i);
  return p;
}

void erase_marked(Graph& g, const std::vector<bool>& dead) {
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!dead[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
}

}  // namespace

Result<int> fold_constants(Graph& g, const OpRegistry& registry) {
  int folded = 0;
  size_t folded_bytes = 0;
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    bool all_const = true;
    for (int in : n.inputs)
      if (in >= 0 && !is_const(g, in)) all_const = false;
    if (!all_const || n.outputs.empty()) continue;
    const OpSchema* schema = registry.find(n.op_type, g.opset);
    if (!schema) continue;  // reported by validation
    SD_TRY(check_arity(*schema, n, g.describe(n)));
    std::vector<HostTensor> scratch_outputs;  // outputs the node omits still need somewhere to go
    std::vector<ValueType> types;
    std::vector<const HostTensor*> consts;
    for (int in : n.inputs) {
      if (in < 0) {
        types.push_back({});
        consts.push_back(nullptr);
      } else {
        const HostTensor& t = *g.values[static_cast<size_t>(in)].constant;
        types.push_back({t.dtype(), t.shape()});
        consts.push_back(&t);
      }
    }
    OpContext ctx{n, g.opset, types, consts, {}};
    auto out_types = schema->infer(ctx);
    if (!out_types) return tl::unexpected(out_types.error());
    SD_TRY(check_output_types(*out_types, g.describe(n)));
    if (out_types->size() < n.outputs.size()) return fail(ErrorCode::kModel, g.describe(n) + ": more outputs than the op has");
    const size_t bytes = total_bytes(*out_types);
    if (bytes > kFoldNodeLimitBytes || folded_bytes + bytes > kFoldTotalBudgetBytes) continue;  // runs as a step
    folded_bytes += bytes;
    std::vector<HostTensor> outs;
    for (const auto& t : *out_types) outs.emplace_back(t.dtype, t.shape);
    if (!all_outputs_empty(*out_types)) {
      OpContext kctx{n, g.opset, types, consts, *out_types};
      auto kernel = schema->create(kctx);
      if (!kernel) return tl::unexpected(kernel.error());
      std::vector<TensorRef> out_refs, in_refs;
      for (auto& o : outs) out_refs.push_back(o.ref());
      for (size_t k = 0; k < consts.size(); ++k) in_refs.push_back(consts[k] ? consts[k]->ref() : TensorRef{});
      SD_TRY(run_once(**kernel, in_refs, out_refs));
    }
    for (size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k) {
      int o = n.outputs[k];
      if (o < 0) continue;
      Value& v = g.values[static_cast<size_t>(o)];
      v.dtype = outs[k].dtype();
      v.shape = outs[k].shape();
      v.shape_known = true;
      v.constant = std::move(outs[k]);
    }
    dead[i] = true;
    ++folded;
  }
  erase_marked(g, dead);
  return folded;
}

Result<int> fold_batchnorm_into_conv(Graph& g) {
  auto uses = use_counts(g);
  auto prod = producers(g);
  std::vector<bool> dead(g.nodes.size(), false);
  int folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& bn = g.nodes[i];
    if (bn.op_type != "BatchNormalization" || bn.inputs.size() < 5 || bn.outputs.size() != 1) continue;
    int x = bn.inputs[0];
    if (x < 0 || uses[static_cast<size_t>(x)] != 1 || prod[static_cast<size_t>(x)] < 0) continue;
    bool params_const = true;
    for (int k = 1; k < 5; ++k) params_const = params_const && is_const(g, bn.inputs[static_cast<size_t>(k)]);
    if (!params_const) continue;
    Node& conv = g.nodes[static_cast<size_t>(prod[static_cast<size_t>(x)])];
    if (conv.op_type != "Conv" || !is_const(g, conv.inputs[1]) || (conv.inputs.size() > 2 && conv.inputs[2] >= 0 && !is_const(g, conv.inputs[2])))
      continue;
    const HostTensor& w = *g.values[static_cast<size_t>(conv.inputs[1])].constant;
    if (w.dtype() != DType::kFloat32 || w.shape().rank < 3) continue;
    const int64_t oc = w.shape()[0];
    auto vec = [&](int k) { return g.values[static_cast<size_t>(bn.inputs[static_cast<size_t>(k)])].constant->to_float_vector(); };
    auto scale = vec(1), bias = vec(2), mean = vec(3), var = vec(4);
    if (static_cast<int64_t>(scale.size()) != oc || bias.size() != scale.size() || mean.size() != scale.size() || var.size() != scale.size())
      continue;
    const float eps = bn.attrs.get_float("epsilon", 1e-5f);
    HostTensor nw = w.clone();
    const int64_t per = w.numel() / oc;
    std::vector<float> old_b(static_cast<size_t>(oc), 0.f);
    if (conv.inputs.size() > 2 && conv.inputs[2] >= 0) old_b = g.values[static_cast<size_t>(conv.inputs[2])].constant->to_float_vector();
    HostTensor nb(DType::kFloat32, Shape{oc});
    for (int64_t c = 0; c < oc; ++c) {
      const float k = scale[static_cast<size_t>(c)] / std::sqrt(var[static_cast<size_t>(c)] + eps);
      float* pw = nw.as<float>() + c * per;
      for (int64_t j = 0; j < per; ++j) pw[j] *= k;
      nb.as<float>()[c] = (old_b[static_cast<size_t>(c)] - mean[static_cast<size_t>(c)]) * k + bias[static_cast<size_t>(c)];
    }
    Value wv{conv.name + ".folded_weight", DType::kFloat32, nw.shape(), true, nw};
    Value bv{conv.name + ".folded_bias", DType::kFloat32, nb.shape(), true, nb};
    conv.inputs[1] = g.add_value(std::move(wv));
    int bid = g.add_value(std::move(bv));
    if (conv.inputs.size() < 3) conv.inputs.push_back(bid);
    else conv.inputs[2] = bid;
    conv.outputs[0] = bn.outputs[0];
    dead[i] = true;
    ++folded;
  }
  erase_marked(g, dead);
  return folded;
}

namespace {

// The activation a node applies to its single input, as a post op; "" if it is none we fuse.
std::string activation_of(const Graph& g, const Node& n, float& alpha, float& beta) {
  alpha = beta = 0;
  if (n.op_type == "Relu") return "relu";
  if (n.op_type == "Sigmoid") return "sigmoid";
  if (n.op_type == "HardSwish") return "hardswish";
  if (n.op_type == "LeakyRelu") {
    alpha = n.attrs.get_float("alpha", 0.01f);
    return "leaky_relu";
  }
  if (n.op_type == "Clip") {
    alpha = -INFINITY, beta = INFINITY;
    if (g.opset < 11) {
      alpha = n.attrs.get_float("min", alpha), beta = n.attrs.get_float("max", beta);
      return "clip";
    }
    for (size_t k = 1; k < n.inputs.size(); ++k) {
      int v = n.inputs[k];
      if (v < 0) continue;
      if (!is_const(g, v)) return "";
      float f = g.values[static_cast<size_t>(v)].constant->to_float_vector().at(0);
      (k == 1 ? alpha : beta) = f;
    }
    return "clip";
  }
  return "";
}

}  // namespace

int fuse_conv_activations(Graph& g) {
  int fused = 0;
  bool changed = true;
  while (changed) {
    changed = false;
    auto uses = use_counts(g);
    auto prod = producers(g);
    std::vector<std::vector<int>> readers(g.values.size());
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (int in : g.nodes[i].inputs)
        if (in >= 0) readers[static_cast<size_t>(in)].push_back(static_cast<int>(i));
    std::vector<bool> dead(g.nodes.size(), false);
    for (size_t ci = 0; ci < g.nodes.size(); ++ci) {
      Node& conv = g.nodes[ci];
      if ((conv.op_type != "Conv" && conv.op_type != "FusedConv") || conv.outputs.size() != 1 || dead[ci]) continue;
      const int y = conv.outputs[0];
      if (y < 0) continue;
      auto post = conv.attrs.get_strings_or_empty("post_ops");
      auto alphas = conv.attrs.get_floats("post_op_alpha"), betas = conv.attrs.get_floats("post_op_beta");
      const auto& rd = readers[static_cast<size_t>(y)];
      bool is_output = uses[static_cast<size_t>(y)] != static_cast<int>(rd.size());
      if (is_output) continue;
      int absorbed_out = -1;
      std::vector<int> absorbed_nodes;
      std::string act;
      float alpha = 0, beta = 0;
      int sum_input = -1;
      if (rd.size() == 1) {
        Node& n = g.nodes[static_cast<size_t>(rd[0])];
        const bool one_output = n.outputs.size() == 1 && n.outputs[0] >= 0;
        act = n.inputs.size() >= 1 && n.inputs[0] == y && one_output ? activation_of(g, n, alpha, beta) : "";
        if (!act.empty()) {
          absorbed_out = n.outputs[0];
          absorbed_nodes = {rd[0]};
        } else if (n.op_type == "Add" && n.inputs.size() == 2 && one_output && conv.inputs.size() < 4 &&
                   (n.inputs[0] == y ? n.inputs[1] : n.inputs[0]) >= 0) {  // an omitted operand: not a residual
          int other = n.inputs[0] == y ? n.inputs[1] : n.inputs[0];
          const Value& ov = g.values[static_cast<size_t>(other)];
          const Value& yv = g.values[static_cast<size_t>(y)];
          int op = other >= 0 ? prod[static_cast<size_t>(other)] : -1;
          // The other operand must exist before the conv runs and have the output's shape.
          bool before = other >= 0 && !ov.constant && (op < 0 || op < static_cast<int>(ci));
          bool same_shape = ov.shape_known && yv.shape_known && ov.shape == yv.shape && ov.shape.is_static();
          // Unknown shapes are checked again when planning (the sum input must match the output).
          if (other != y && before && (same_shape || !ov.shape_known || !yv.shape_known)) {
            act = "sum";
            sum_input = other;
            absorbed_out = n.outputs[0];
            absorbed_nodes = {rd[0]};
          }
        }
      } else if (rd.size() == 2) {  // SiLU: Mul(y, Sigmoid(y))
        int si = -1, mi = -1;
        for (int r : rd) {
          const Node& n = g.nodes[static_cast<size_t>(r)];
          if (n.op_type == "Sigmoid") si = r;
          if (n.op_type == "Mul") mi = r;
        }
        if (si >= 0 && mi >= 0) {
          const Node& s = g.nodes[static_cast<size_t>(si)];
          const Node& m = g.nodes[static_cast<size_t>(mi)];
          // Found by the fuzzer: a Sigmoid or Mul without outputs was indexed here.
          const bool shaped = s.inputs.size() == 1 && s.outputs.size() == 1 && s.outputs[0] >= 0 && m.outputs.size() == 1 &&
                              m.outputs[0] >= 0;
          const int sy = shaped ? s.outputs[0] : -1;
          bool pattern = shaped && m.inputs.size() == 2 && ((m.inputs[0] == y && m.inputs[1] == sy) || (m.inputs[1] == y && m.inputs[0] == sy)) &&
                         uses[static_cast<size_t>(sy)] == 1;
          if (pattern) {
            act = "silu";
            absorbed_out = m.outputs[0];
            absorbed_nodes = {si, mi};
          }
        }
      }
      if (act.empty()) continue;
      if (act != "sum" && !post.empty() && post.back() != "sum") continue;  // one activation per position
      conv.op_type = "FusedConv";
      conv.domain = "streamdet";
      post.push_back(act);
      alphas.resize(post.size() - 1, 0.f), betas.resize(post.size() - 1, 0.f);
      alphas.push_back(alpha), betas.push_back(beta);
      Attribute pa;
      pa.kind = Attribute::Kind::kStrings;
      pa.strings = post;
      conv.attrs.set("post_ops", pa);
      Attribute aa;
      aa.kind = Attribute::Kind::kFloats;
      aa.floats = alphas;
      conv.attrs.set("post_op_alpha", aa);
      Attribute ba;
      ba.kind = Attribute::Kind::kFloats;
      ba.floats = betas;
      conv.attrs.set("post_op_beta", ba);
      if (sum_input >= 0) {
        while (conv.inputs.size() < 3) conv.inputs.push_back(-1);
        conv.inputs.push_back(sum_input);
      }
      conv.outputs[0] = absorbed_out;
      for (int a : absorbed_nodes) dead[static_cast<size_t>(a)] = true;
      ++fused;
      changed = true;
      break;  // indices changed meaning; recompute the maps
    }
    erase_marked(g, dead);
  }
  return fused;
}

std::vector<Node> split_fused_sum(const Node& fused, int opset, const std::function<int()>& new_value,
                                  const std::function<int(float)>& new_constant) {
  const auto post = fused.attrs.get_strings_or_empty("post_ops");
  const auto alphas = fused.attrs.get_floats("post_op_alpha"), betas = fused.attrs.get_floats("post_op_beta");
  const size_t at = static_cast<size_t>(std::find(post.begin(), post.end(), "sum") - post.begin());
  auto floats = [](std::vector<float> v) {
    Attribute a;
    a.kind = Attribute::Kind::kFloats;
    a.floats = std::move(v);
    return a;
  };
  auto part = [&](const std::vector<float>& v, size_t b, size_t e) {
    return std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(std::min(b, v.size())),
                              v.begin() + static_cast<std::ptrdiff_t>(std::min(e, v.size())));
  };
  std::vector<Node> out;
  Node conv = fused;
  conv.inputs.resize(3);
  Attribute names;
  names.kind = Attribute::Kind::kStrings;
  names.strings.assign(post.begin(), post.begin() + static_cast<std::ptrdiff_t>(std::min(at, post.size())));
  conv.attrs.set("post_ops", names);
  conv.attrs.set("post_op_alpha", floats(part(alphas, 0, at)));
  conv.attrs.set("post_op_beta", floats(part(betas, 0, at)));
  const int final_out = fused.outputs[0];
  const bool tail = at + 1 < post.size();
  conv.outputs = {new_value()};
  out.push_back(conv);
  auto node = [&](const std::string& op, std::vector<int> ins, int output) {
    Node n;
    n.op_type = op;
    n.name = fused.name + "/" + op;
    n.inputs = std::move(ins);
    n.outputs = {output};
    out.push_back(n);
    return output;
  };
  int x = node("Add", {conv.outputs[0], fused.inputs.size() > 3 ? fused.inputs[3] : -1}, tail ? new_value() : final_out);
  for (size_t i = at + 1; i < post.size(); ++i) {
    const int y = i + 1 == post.size() ? final_out : new_value();
    const float alpha = i < alphas.size() ? alphas[i] : 0.f, beta = i < betas.size() ? betas[i] : 0.f;
    const std::string& op = post[i];
    if (op == "relu") node("Relu", {x}, y);
    if (op == "sigmoid") node("Sigmoid", {x}, y);
    if (op == "hardswish") node("HardSwish", {x}, y);
    if (op == "silu") node("Mul", {x, node("Sigmoid", {x}, new_value())}, y);
    if (op == "leaky_relu") {
      node("LeakyRelu", {x}, y);
      Attribute a;
      a.kind = Attribute::Kind::kFloat;
      a.f = alpha;
      out.back().attrs.set("alpha", a);
    }
    if (op == "clip") {
      node("Clip", {x}, y);
      if (opset < 11) {
        Attribute lo, hi;
        lo.kind = hi.kind = Attribute::Kind::kFloat;
        lo.f = alpha, hi.f = beta;
        out.back().attrs.set("min", lo);
        out.back().attrs.set("max", hi);
      } else {
        out.back().inputs = {x, new_constant(alpha), new_constant(beta)};
      }
    }
    x = y;
  }
  return out;
}

int fuse_bin_expectation(Graph& g) {
  auto uses = use_counts(g);
  auto prod = producers(g);
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t ci = 0; ci < g.nodes.size(); ++ci) {
    Node& conv = g.nodes[ci];
    if (conv.op_type != "Conv" || conv.inputs.size() < 2 || conv.outputs.size() != 1 || conv.outputs[0] < 0) continue;
    // The conv: 1x1, one output channel, constant float weights (and bias), nothing unusual.
    const int wv = conv.inputs[1], bv = conv.inputs.size() > 2 ? conv.inputs[2] : -1;
    if (!is_const(g, wv) || (bv >= 0 && !is_const(g, bv))) continue;
    const HostTensor& w = *g.values[static_cast<size_t>(wv)].constant;
    if (w.dtype() != DType::kFloat32 || w.shape().rank != 4 || w.shape()[0] != 1 || w.shape()[2] != 1 || w.shape()[3] != 1) continue;
    if (bv >= 0 && (g.values[static_cast<size_t>(bv)].constant->dtype() != DType::kFloat32 || g.values[static_cast<size_t>(bv)].constant->numel() != 1))
      continue;
    const auto& a = conv.attrs;
    auto all_are = [](const std::vector<int64_t>& v, int64_t x) { return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; }); };
    if (a.get_int("group", 1) != 1 || !all_are(a.get_ints("strides", {1, 1}), 1) || !all_are(a.get_ints("dilations", {1, 1}), 1) ||
        !all_are(a.get_ints("pads", {0, 0, 0, 0}), 0) || a.get_string("auto_pad", "NOTSET") != "NOTSET")
      continue;
    // Walk back through Transposes and one Softmax, each read only here, to x; labels[i] is the
    // axis of x that axis i of the current value is.
    std::vector<int> chain;  // node indices, conv input first
    int v = conv.inputs[0], softmax = -1;
    bool ok_chain = true;
    while (v >= 0 && prod[static_cast<size_t>(v)] >= 0) {
      const Node& n = g.nodes[static_cast<size_t>(prod[static_cast<size_t>(v)])];
      if (n.op_type != "Transpose" && n.op_type != "Softmax") break;
      if (uses[static_cast<size_t>(v)] != 1 || n.inputs.size() != 1 || n.outputs.size() != 1) { ok_chain = false; break; }
      if (n.op_type == "Softmax") {
        if (softmax >= 0) { ok_chain = false; break; }
        softmax = prod[static_cast<size_t>(v)];
      }
      chain.push_back(prod[static_cast<size_t>(v)]);
      v = n.inputs[0];
    }
    if (!ok_chain || softmax < 0 || v < 0) continue;
    std::vector<int> labels = {0, 1, 2, 3};  // x's own axes
    int bin_label = -1;
    for (auto it = chain.rbegin(); it != chain.rend() && ok_chain; ++it) {
      const Node& n = g.nodes[static_cast<size_t>(*it)];
      if (n.op_type == "Transpose") {
        auto perm = n.attrs.get_ints("perm");
        std::vector<int> next(4);
        auto sorted = perm;
        std::sort(sorted.begin(), sorted.end());
        ok_chain = sorted == std::vector<int64_t>{0, 1, 2, 3};  // an invalid perm stays for the Transpose to refuse
        for (size_t i = 0; i < 4 && ok_chain; ++i) {
          ok_chain = perm[i] >= 0 && perm[i] < 4;
          if (ok_chain) next[i] = labels[static_cast<size_t>(perm[i])];
        }
        labels = next;
      } else {
        int64_t axis = n.attrs.get_int("axis", g.opset >= 13 ? -1 : 1);
        if (axis < 0) axis += 4;
        // Before opset 13 Softmax flattens the axes from `axis` on: one axis only when it is the last.
        ok_chain = axis >= 0 && axis < 4 && (g.opset >= 13 || axis == 3);
        if (ok_chain) bin_label = labels[static_cast<size_t>(axis)];
      }
    }
    // The conv reads [n, bins, sides, anchors]: batch first, bins as channels, anchors last in x.
    if (!ok_chain || labels[0] != 0 || labels[1] != bin_label || labels[3] != 3 || (bin_label != 1 && bin_label != 2)) continue;
    Node node;
    node.name = conv.name;
    node.op_type = "BinExpectation";
    node.domain = "streamdet";
    node.inputs = {v, wv};
    if (bv >= 0) node.inputs.push_back(bv);
    node.outputs = conv.outputs;
    Attribute axis;
    axis.kind = Attribute::Kind::kInt;
    axis.i = bin_label;
    node.attrs.set("bin_axis", axis);
    conv = std::move(node);
    for (int n : chain) dead[static_cast<size_t>(n)] = true;
    ++fused;
  }
  erase_marked(g, dead);
  return fused;
}

int remove_dead_nodes(Graph& g) {
  int removed = 0;
  while (true) {
    auto uses = use_counts(g);
    std::vector<bool> dead(g.nodes.size(), false);
    int n = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      bool used = false;
      for (int o : g.nodes[i].outputs)
        if (o >= 0 && uses[static_cast<size_t>(o)] > 0) used = true;
      if (!used) dead[i] = true, ++n;
    }
    if (n == 0) break;
    erase_marked(g, dead);
    removed += n;
  }
  return removed;
}

}  // namespace sd::native::passes
