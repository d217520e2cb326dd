// QDQ convolutions made int8 (passes.h, fuse_qdq_convolutions). ONNX Runtime's quantize_static
// writes a quantized convolution as
//     xq -> DequantizeLinear -> Conv <- DequantizeLinear <- w (int8)   [<- DequantizeLinear <- b (int32)]
//                                 \-> QuantizeLinear -> yq
// which, run as written, dequantizes every activation and weight to float and quantizes the
// result again. Folded, it is one Int8Conv: the quantized input, the int8 weights as they are,
// the bias in accumulator units, and the scales and zero points as attributes (oneDNN's output
// scales and zero points, cpu/dnnl_qconv.cpp). A chain of them passes int8 tensors from one to
// the next: the DequantizeLinear that fed the next Conv is now that Int8Conv's input. A Conv
// whose output is not quantized (no QuantizeLinear alone after it) is an Int8Conv writing floats.
#include <cmath>
#include <optional>

#include "engine/native/conv_attrs.h"
#include "engine/native/passes/passes.h"

namespace sd::native::passes {
namespace {

const HostTensor* constant(const Graph& g, int v) {
  if (v < 0) return nullptr;
  const Value& val = g.values[static_cast<size_t>(v)];
  return val.constant ? &*val.constant : nullptr;
}

// A constant scale (float32, each positive and finite) and its zero point (absent: uint8 0).
struct Quant {
  std::vector<float> scales;
  std::vector<int32_t> zero_points;
  DType type = DType::kUInt8;  // the quantized tensor's type, from the zero point
};

std::optional<Quant> quant_of(const Graph& g, const Node& qdq, bool int32_ok = false) {
  const HostTensor* s = constant(g, qdq.inputs.size() > 1 ? qdq.inputs[1] : -1);
  if (!s || s->dtype() != DType::kFloat32 || s->numel() < 1) return std::nullopt;
  Quant q;
  q.scales.assign(s->as<float>(), s->as<float>() + s->numel());
  for (float v : q.scales)
    if (!(std::isfinite(v) && v > 0.f)) return std::nullopt;
  if (qdq.inputs.size() > 2 && qdq.inputs[2] >= 0) {
    const HostTensor* z = constant(g, qdq.inputs[2]);
    if (!z || z->numel() != s->numel() || (z->dtype() != DType::kInt8 && z->dtype() != DType::kUInt8 && !(int32_ok && z->dtype() == DType::kInt32)))
      return std::nullopt;
    q.type = z->dtype();
    auto zs = z->to_int64_vector();
    q.zero_points.assign(zs.begin(), zs.end());
  } else {
    q.zero_points.assign(q.scales.size(), 0);
  }
  if (qdq.attrs.get_int("block_size", 0) != 0) return std::nullopt;
  return q;
}

Attribute float_attr(float f) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = f;
  return a;
}
Attribute int_attr(int64_t i) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = i;
  return a;
}

// Int8Conv -> DequantizeLinear -> SiLU (x * Sigmoid(x)) [-> QuantizeLinear]: YOLO's activation
// after a quantized convolution. On 256 possible inputs, the three (four) float passes are one
// table lookup per byte (Int8Conv's "silu_*" attributes, cpu/dnnl_qconv.cpp): to the quantized
// SiLU where a QuantizeLinear alone reads it (between two quantized convolutions), else to its
// float value (an Int8Table node after the Int8Conv, cpu/int8_table_ops.cpp).
int fuse_int8_silu(Graph& g) {
  std::vector<int> prod(g.values.size(), -1);
  std::vector<std::vector<int>> readers(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int o : g.nodes[i].outputs)
      if (o >= 0) prod[static_cast<size_t>(o)] = static_cast<int>(i);
    for (int v : g.nodes[i].inputs)
      if (v >= 0) readers[static_cast<size_t>(v)].push_back(static_cast<int>(i));
  }
  const std::vector<int> uses = use_counts(g);
  auto only_reader = [&](int v, const char* op) -> Node* {
    if (v < 0 || uses[static_cast<size_t>(v)] != 1 || readers[static_cast<size_t>(v)].size() != 1) return nullptr;
    Node& r = g.nodes[static_cast<size_t>(readers[static_cast<size_t>(v)][0])];
    return r.op_type == op && r.domain.empty() ? &r : nullptr;
  };
  std::vector<bool> dead(g.nodes.size(), false);
  std::vector<std::pair<size_t, Node>> after;  // nodes to insert after node i, in i's order
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& c = g.nodes[i];
    if (c.op_type != "Int8Conv" || c.attrs.has("silu_in_scale") || c.attrs.get_int("y_float", 0) != 0) continue;
    Node* dq = only_reader(c.outputs[0], "DequantizeLinear");
    if (!dq || dq->inputs[0] != c.outputs[0]) continue;
    auto in = quant_of(g, *dq);
    if (!in || in->scales.size() != 1) continue;
    const int d = dq->outputs[0];
    if (uses[static_cast<size_t>(d)] != 2 || readers[static_cast<size_t>(d)].size() != 2) continue;
    Node* sg = nullptr;
    Node* mul = nullptr;
    for (int r : readers[static_cast<size_t>(d)]) {
      Node& n = g.nodes[static_cast<size_t>(r)];
      if (n.op_type == "Sigmoid" && n.domain.empty()) sg = &n;
      else if (n.op_type == "Mul" && n.domain.empty()) mul = &n;
    }
    if (!sg || !mul || mul->inputs.size() != 2) continue;
    const int s = sg->outputs[0];
    if (uses[static_cast<size_t>(s)] != 1 || !((mul->inputs[0] == d && mul->inputs[1] == s) || (mul->inputs[0] == s && mul->inputs[1] == d))) continue;
    for (const Node* n : {static_cast<const Node*>(dq), static_cast<const Node*>(sg), static_cast<const Node*>(mul)})
      dead[static_cast<size_t>(n - g.nodes.data())] = true;
    ++fused;
    Node* q = only_reader(mul->outputs[0], "QuantizeLinear");
    std::optional<Quant> out;
    if (q) out = quant_of(g, *q);
    if (q && out && out->scales.size() == 1 && !(q->inputs.size() < 3 && q->attrs.get_int("output_dtype", 0) != 0)) {
      c.attrs.set("silu_in_scale", float_attr(in->scales[0]));
      c.attrs.set("silu_in_zero_point", int_attr(in->zero_points[0]));
      c.attrs.set("silu_out_scale", float_attr(out->scales[0]));
      c.attrs.set("silu_out_zero_point", int_attr(out->zero_points[0]));
      c.attrs.set("out_signed", int_attr(out->type == DType::kInt8));
      c.outputs = q->outputs;
      dead[static_cast<size_t>(q - g.nodes.data())] = true;
    } else {
      // The SiLU's float result is read by float ops (Split, Concat, the residual Add of C2f, as
      // `streamdet quantize` writes YOLOv8): the convolution keeps its quantized result, and an
      // Int8Table of it gives the floats (cpu/int8_table_ops.cpp). Split, Concat, Add and the
      // next QuantizeLinear can then read the bytes instead (int8_dataflow.cpp).
      Node t;
      t.name = c.name + "/silu_table";
      t.op_type = "Int8Table";
      t.domain = "streamdet";
      t.inputs = {c.outputs[0]};
      t.outputs = mul->outputs;
      Attribute tab;
      tab.kind = Attribute::Kind::kFloats;
      const bool in_signed = in->type == DType::kInt8;
      for (int b = 0; b < 256; ++b) {
        const int32_t v = in_signed ? static_cast<int8_t>(b) : b;
        const float x = static_cast<float>(v - in->zero_points[0]) * in->scales[0];
        tab.floats.push_back(x * (1.f / (1.f + std::exp(-x))));
      }
      t.attrs.set("table", tab);
      t.attrs.set("out_dtype", int_attr(1));
      after.emplace_back(i, std::move(t));
    }
  }
  if (fused) {
    std::vector<Node> kept;
    size_t a = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!dead[i]) kept.push_back(std::move(g.nodes[i]));
      for (; a < after.size() && after[a].first == i; ++a) kept.push_back(std::move(after[a].second));
    }
    g.nodes = std::move(kept);
  }
  return fused;
}

}  // namespace

int fuse_qdq_convolutions(Graph& g, bool int8_exact, int* left_inexact) {
  if (left_inexact) *left_inexact = 0;
  std::vector<int> prod(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int o : g.nodes[i].outputs)
      if (o >= 0) prod[static_cast<size_t>(o)] = static_cast<int>(i);
  std::vector<int> uses = use_counts(g);
  std::vector<int> reader(g.values.size(), -1);  // the (last) node reading each value
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs)
      if (v >= 0) reader[static_cast<size_t>(v)] = static_cast<int>(i);
  auto producer = [&](int v, const char* op) -> const Node* {
    if (v < 0 || prod[static_cast<size_t>(v)] < 0) return nullptr;
    const Node& p = g.nodes[static_cast<size_t>(prod[static_cast<size_t>(v)])];
    return p.op_type == op && p.domain.empty() ? &p : nullptr;
  };

  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& conv = g.nodes[i];
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.inputs.size() < 2 || conv.outputs.size() != 1) continue;
    // Input: a per-tensor DequantizeLinear of an int8/uint8 tensor.
    const Node* dx = producer(conv.inputs[0], "DequantizeLinear");
    if (!dx) continue;
    auto xq = quant_of(g, *dx);
    if (!xq || xq->scales.size() != 1) continue;
    // Weights: a DequantizeLinear of constant int8 weights, symmetric (zero points 0: oneDNN has
    // no weight zero points), per tensor or per output channel (axis 0).
    const Node* dw = producer(conv.inputs[1], "DequantizeLinear");
    if (!dw) continue;
    const HostTensor* w = constant(g, dw->inputs[0]);
    auto wq = quant_of(g, *dw);
    if (!w || w->dtype() != DType::kInt8 || w->shape().rank != 4 || !wq) continue;
    const int64_t oc = w->shape()[0];
    // Without VNNI only a uint8 source with 7-bit weights is computed exactly (int8_support.h).
    // Any other is still one Int8Conv between int8 tensors, computed in float32
    // (ops::kInt8InFloat): what the graph as written computes, without its float
    // activations and their quantize and dequantize passes.
    const bool in_float = !int8_exact && (xq->type != DType::kUInt8 || std::any_of(w->as<int8_t>(), w->as<int8_t>() + w->numel(), [](int8_t v) { return v < -63 || v > 63; }));
    if (wq->scales.size() != 1 && (static_cast<int64_t>(wq->scales.size()) != oc || dw->attrs.get_int("axis", 1) != 0)) continue;
    if (std::any_of(wq->zero_points.begin(), wq->zero_points.end(), [](int32_t z) { return z != 0; })) continue;
    // Output: read only by a per-tensor QuantizeLinear (a quantized result), or else left float
    // (the head's last convolutions as `streamdet quantize --head int8-input` writes them, or
    // ONNX Runtime's quantize_static with op_types_to_exclude_output_quantization): oneDNN's
    // int8 convolution then writes f32, x_scale * w_scale[oc] * (sum + bias) (dnnl_qconv.cpp).
    const int y = conv.outputs[0];
    std::optional<Quant> yq;
    size_t qi = g.nodes.size();
    if (uses[static_cast<size_t>(y)] == 1 && reader[static_cast<size_t>(y)] >= 0) {
      const size_t r = static_cast<size_t>(reader[static_cast<size_t>(y)]);
      const Node& qn = g.nodes[r];
      if (qn.op_type == "QuantizeLinear" && qn.domain.empty() && qn.inputs[0] == y) {
        yq = quant_of(g, qn);
        if (yq && yq->scales.size() == 1 && !(qn.inputs.size() < 3 && qn.attrs.get_int("output_dtype", 0) != 0)) qi = r;
        else yq.reset();
      }
    }
    // Bias: none, a float constant, or a DequantizeLinear of a constant int32 one.
    std::vector<float> bias_real;
    if (conv.inputs.size() > 2 && conv.inputs[2] >= 0) {
      if (const HostTensor* b = constant(g, conv.inputs[2]); b && b->dtype() == DType::kFloat32 && b->numel() == oc) {
        bias_real.assign(b->as<float>(), b->as<float>() + oc);
      } else if (const Node* db = producer(conv.inputs[2], "DequantizeLinear")) {
        const HostTensor* bq = constant(g, db->inputs[0]);
        auto bs = quant_of(g, *db, true);
        if (!bq || bq->dtype() != DType::kInt32 || bq->numel() != oc || !bs ||
            std::any_of(bs->zero_points.begin(), bs->zero_points.end(), [](int32_t z) { return z != 0; }) || (bs->scales.size() != 1 && static_cast<int64_t>(bs->scales.size()) != oc))
          continue;
        for (int64_t c = 0; c < oc; ++c) bias_real.push_back(static_cast<float>(bq->as<int32_t>()[c]) * bs->scales[bs->scales.size() == 1 ? 0 : static_cast<size_t>(c)]);
      } else {
        continue;
      }
    }

    Node q;
    q.name = conv.name;
    q.op_type = "Int8Conv";
    q.domain = "streamdet";
    for (const auto& [name, a] : conv.attrs.all()) q.attrs.set(name, a);
    if (in_float) q.attrs.set(ops::kInt8InFloat, int_attr(1));
    q.attrs.set("x_scale", float_attr(xq->scales[0]));
    q.attrs.set("x_zero_point", int_attr(xq->zero_points[0]));
    if (yq) {
      q.attrs.set("y_scale", float_attr(yq->scales[0]));
      q.attrs.set("y_zero_point", int_attr(yq->zero_points[0]));
      q.attrs.set("y_signed", int_attr(yq->type == DType::kInt8));
    } else {
      q.attrs.set("y_float", int_attr(1));
    }
    Attribute ws;
    ws.kind = Attribute::Kind::kFloats;
    ws.floats = wq->scales;
    q.attrs.set("w_scales", ws);
    q.inputs = {dx->inputs[0], dw->inputs[0]};
    if (!bias_real.empty()) {
      // In accumulator units: oneDNN adds the bias to the int32 sum before the output scale.
      HostTensor b(DType::kFloat32, Shape{oc});
      for (int64_t c = 0; c < oc; ++c)
        b.as<float>()[c] = bias_real[static_cast<size_t>(c)] / (xq->scales[0] * wq->scales[wq->scales.size() == 1 ? 0 : static_cast<size_t>(c)]);
      Value v;
      v.name = conv.name + "/int8_bias";
      v.dtype = DType::kFloat32;
      v.shape = Shape{oc};
      v.shape_known = true;
      v.constant = std::move(b);
      q.inputs.push_back(g.add_value(std::move(v)));
    }
    q.outputs = yq ? g.nodes[qi].outputs : conv.outputs;
    conv = std::move(q);  // in the Conv's place: its inputs come before, the QuantizeLinear's readers after
    if (yq) dead[qi] = true;
    ++fused;
    if (in_float && left_inexact) ++*left_inexact;
  }
  if (fused) {
    std::vector<Node> kept;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (!dead[i]) kept.push_back(std::move(g.nodes[i]));
    g.nodes = std::move(kept);
    remove_dead_nodes(g);
    fuse_int8_silu(g);
  }
  return fused;
}

}  // namespace sd::native::passes
