// Quantized tensors kept quantized through the data ops between int8 convolutions (passes.h,
// keep_int8_through_data_ops). After fuse_qdq_convolutions a QDQ model still dequantizes the
// int8 convolutions' results to float where Concat, Split and residual Adds read them
// (YOLOv8's C2f, SPPF, the neck), and quantizes the float results again for the next
// convolution. Every rewrite here computes the same values from the same bytes:
//  - DequantizeLinear (per tensor) is an Int8Table to float: 256 possible inputs.
//  - QuantizeLinear of an Int8Table's floats is an Int8Table to bytes (the two composed), or
//    nothing where that table gives back each byte (a QuantizeLinear with the parameters of the
//    DequantizeLinear before it): its readers read the bytes.
//  - QuantizeLinear of a Concat is a Concat of each input's QuantizeLinear (elementwise ops
//    commute with a concatenation), so the Concat copies bytes.
//  - Split / Slice / Resize (nearest) of an Int8Table's floats move the bytes, each part mapped
//    by the same table after (the table before stays only for its other readers).
//  - Add of two Int8Tables' floats is Int8AddTables (both tables read, added, in one pass), and
//    with its QuantizeLinear writes bytes (in its place where that is its only reader, else as
//    a second Int8AddTables of the same inputs); Add of an Int8AddTables' floats and a third
//    table's is an Int8AddTables of three inputs, (ta + tb) + tc.
// The float ops they replace compute the same floats in the same order, so the results are
// those of the graph as written (qdq_fusion_test.cpp checks it).
#include <algorithm>
#include <cmath>
#include <optional>

#include "engine/native/passes/passes.h"

namespace sd::native::passes {
namespace {

struct PerTensor {
  float scale = 1.f;
  int32_t zero_point = 0;
  bool is_signed = false;
};

const HostTensor* constant_of(const Graph& g, const Node& n, size_t k) {
  if (n.inputs.size() <= k || n.inputs[k] < 0) return nullptr;
  const Value& v = g.values[static_cast<size_t>(n.inputs[k])];
  return v.constant ? &*v.constant : nullptr;
}

// A QuantizeLinear / DequantizeLinear with one constant scale and an int8/uint8 zero point (for
// DequantizeLinear a zero point is required: without one its input may be int32).
std::optional<PerTensor> per_tensor(const Graph& g, const Node& n) {
  const HostTensor* s = constant_of(g, n, 1);
  if (!s || s->dtype() != DType::kFloat32 || s->numel() != 1 || n.attrs.get_int("block_size", 0) != 0) return std::nullopt;
  PerTensor p;
  p.scale = s->as<float>()[0];
  if (!(std::isfinite(p.scale) && p.scale > 0.f)) return std::nullopt;
  const HostTensor* z = constant_of(g, n, 2);
  if (!z) {
    if (n.inputs.size() > 2 && n.inputs[2] >= 0) return std::nullopt;  // a zero point given at run time
    if (n.op_type != "QuantizeLinear" || n.attrs.get_int("output_dtype", 0) != 0) return std::nullopt;
    return p;  // uint8, zero point 0
  }
  if (z->numel() != 1 || (z->dtype() != DType::kUInt8 && z->dtype() != DType::kInt8)) return std::nullopt;
  p.is_signed = z->dtype() == DType::kInt8;
  p.zero_point = static_cast<int32_t>(z->to_int64_vector()[0]);
  return p;
}

bool is_op(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }
bool is_float_table(const Node& n) { return n.op_type == "Int8Table" && n.attrs.get_int("out_dtype", 1) == 1; }

Attribute int_attr(int64_t i) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = i;
  return a;
}
Attribute floats_attr(std::vector<float> f) {
  Attribute a;
  a.kind = Attribute::Kind::kFloats;
  a.floats = std::move(f);
  return a;
}

Node table_node(const std::string& name, int in, int out, std::vector<float> table, int64_t out_dtype) {
  Node t;
  t.name = name;
  t.op_type = "Int8Table";
  t.domain = "streamdet";
  t.inputs = {in};
  t.outputs = {out};
  t.attrs.set("table", floats_attr(std::move(table)));
  t.attrs.set("out_dtype", int_attr(out_dtype));
  return t;
}

// QuantizeLinear's arithmetic (cpu/quant_ops.cpp) on one float.
float quantize(float x, const PerTensor& q) {
  const float lo = q.is_signed ? -128.f : 0.f, hi = q.is_signed ? 127.f : 255.f;
  float r = __builtin_rintf(x / q.scale) + static_cast<float>(q.zero_point);
  r = r == r ? r : 0.f;
  return std::clamp(r, lo, hi);
}

// Whether a byte table (entries as quantize() gives them) gives back each byte. Then it reads and
// writes one type as well: a signed table over unsigned bytes (or the other way) cannot, since
// its entries would have to fall from 127 to -128 where its input's values rise.
bool maps_each_byte_to_itself(const std::vector<float>& t, bool is_signed) {
  if (t.size() != 256) return false;
  for (int b = 0; b < 256; ++b) {
    const int v = static_cast<int>(t[static_cast<size_t>(b)]);
    if ((is_signed ? static_cast<uint8_t>(static_cast<int8_t>(v)) : static_cast<uint8_t>(v)) != b) return false;
  }
  return true;
}

// Every node input that reads `from` reads `to` instead.
void replace_uses(Graph& g, int from, int to) {
  for (auto& node : g.nodes)
    for (int& in : node.inputs)
      if (in == from) in = to;
}

struct Index {
  std::vector<int> prod;
  std::vector<int> uses;
  explicit Index(const Graph& g) : prod(g.values.size(), -1), uses(use_counts(g)) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (int o : g.nodes[i].outputs)
        if (o >= 0) prod[static_cast<size_t>(o)] = static_cast<int>(i);
  }
  const Node* producer(const Graph& g, int v) const {
    return v >= 0 && prod[static_cast<size_t>(v)] >= 0 ? &g.nodes[static_cast<size_t>(prod[static_cast<size_t>(v)])] : nullptr;
  }
  bool only_use(int v) const { return v >= 0 && uses[static_cast<size_t>(v)] == 1; }
};

int new_value(Graph& g, const std::string& name) {
  Value v;
  v.name = name;
  return g.add_value(std::move(v));
}

// One rewrite at node i, or false. May insert nodes before or after i (the caller restarts).
bool rewrite_at(Graph& g, size_t i, const Index& ix) {
  Node& n = g.nodes[i];
  // Before validation: a node may come with no inputs or outputs (the loader refuses it later;
  // found by the fuzzer: tests/data/fuzz/split_without_input.onnx).
  if (n.inputs.empty() || n.outputs.empty()) return false;
  if (is_op(n, "DequantizeLinear") && n.inputs[0] >= 0 && !g.values[static_cast<size_t>(n.inputs[0])].constant) {
    const auto p = per_tensor(g, n);
    if (!p) return false;
    std::vector<float> t;
    for (int b = 0; b < 256; ++b) {
      const int32_t v = p->is_signed ? static_cast<int8_t>(b) : b;
      t.push_back(static_cast<float>(v - p->zero_point) * p->scale);  // as DequantizeLinear computes it
    }
    n = table_node(n.name, n.inputs[0], n.outputs[0], std::move(t), 1);
    return true;
  }
  if (is_op(n, "QuantizeLinear")) {
    const auto q = per_tensor(g, n);
    if (!q) return false;
    const Node* src = ix.producer(g, n.inputs[0]);
    if (!src) return false;
    if (is_float_table(*src)) {  // the table's floats quantized: one byte table
      std::vector<float> t;
      for (float f : src->attrs.get_floats("table")) t.push_back(quantize(f, *q));
      const bool graph_output = std::find(g.outputs.begin(), g.outputs.end(), n.outputs[0]) != g.outputs.end();
      if (!graph_output && maps_each_byte_to_itself(t, q->is_signed)) {
        // The quantization undoes the dequantization (one scale and zero point on both sides, as
        // ONNX Runtime's quantizer gives the tensors around Split, Resize, Reshape...): its
        // readers read the bytes themselves, and no pass over them is made.
        replace_uses(g, n.outputs[0], src->inputs[0]);
        g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
        return true;
      }
      n = table_node(n.name, src->inputs[0], n.outputs[0], std::move(t), q->is_signed ? 3 : 2);
      return true;
    }
    if (src->op_type == "Int8AddTables" && src->attrs.get_int("out_dtype", 1) == 1) {
      // Its only reader: the sum written as bytes. Beside other readers of the floats (YOLOv8's
      // C2f with two bottlenecks: the next bottleneck's Add and the Concat read them too): a
      // second Int8AddTables of the same bytes writes them, a byte per element read twice
      // instead of four bytes of floats quantized.
      const bool only = ix.only_use(n.inputs[0]);
      Node add = only ? Node{} : *src;
      Node& target = only ? g.nodes[static_cast<size_t>(ix.prod[static_cast<size_t>(n.inputs[0])])] : add;
      Attribute s;
      s.kind = Attribute::Kind::kFloat;
      s.f = q->scale;
      target.attrs.set("out_scale", s);
      target.attrs.set("out_zero_point", int_attr(q->zero_point));
      target.attrs.set("out_dtype", int_attr(q->is_signed ? 3 : 2));
      target.outputs = n.outputs;
      if (only) {
        g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        add.name = n.name;
        n = std::move(add);
      }
      return true;
    }
    if (is_op(*src, "Concat") && ix.only_use(n.inputs[0]) && !src->inputs.empty() &&
        std::all_of(src->inputs.begin(), src->inputs.end(), [](int v) { return v >= 0; })) {  // Concat(x...) -> Q  =>  Concat(Q(x)...)
      const size_t ci = static_cast<size_t>(ix.prod[static_cast<size_t>(n.inputs[0])]);
      const Node qn = n;
      std::vector<Node> qs;
      std::vector<int> ins;
      for (size_t k = 0; k < g.nodes[ci].inputs.size(); ++k) {
        Node qk = qn;
        qk.name = qn.name + "/" + std::to_string(k);
        qk.inputs[0] = g.nodes[ci].inputs[k];
        qk.outputs = {new_value(g, qk.name)};
        ins.push_back(qk.outputs[0]);
        qs.push_back(std::move(qk));
      }
      g.nodes[ci].inputs = ins;
      g.nodes[ci].outputs = qn.outputs;
      g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(ci), qs.begin(), qs.end());
      return true;
    }
    return false;
  }
  const bool moves_bytes = is_op(n, "Split") || is_op(n, "Slice") ||
                           ((is_op(n, "Resize") || is_op(n, "Upsample")) && n.attrs.get_string("mode", "nearest") == "nearest");
  if (moves_bytes && n.inputs[0] >= 0) {
    const Node* src = ix.producer(g, n.inputs[0]);
    if (!src || !is_float_table(*src)) return false;
    const Node table = *src;
    std::vector<Node> tables;
    n.inputs[0] = table.inputs[0];
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k] < 0) continue;
      const int bytes = new_value(g, g.values[static_cast<size_t>(n.outputs[k])].name + "/int8");
      Node t = table;
      t.name = n.name + "/table" + std::to_string(k);
      t.inputs = {bytes};
      t.outputs = {n.outputs[k]};
      g.nodes[i].outputs[k] = bytes;
      tables.push_back(std::move(t));
    }
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i) + 1, tables.begin(), tables.end());
    return true;  // the table before the Split stays for its other readers, if any
  }
  if (is_op(n, "Add") && n.inputs.size() == 2) {
    const Node* a = ix.producer(g, n.inputs[0]);
    const Node* b = ix.producer(g, n.inputs[1]);
    if (!a || !b) return false;
    // An Int8AddTables' floats (two tables) and a third table's: one Int8AddTables of three,
    // (ta + tb) + tc in the graph's order (a float Add is commutative, so either side). YOLOv8's
    // C2f with two bottlenecks: the second one's residual Add, whose sum only the Concat reads.
    const bool a_sum = a->op_type == "Int8AddTables" && a->inputs.size() == 2 && a->attrs.get_int("out_dtype", 1) == 1;
    const bool b_sum = b->op_type == "Int8AddTables" && b->inputs.size() == 2 && b->attrs.get_int("out_dtype", 1) == 1;
    if ((a_sum && is_float_table(*b)) || (b_sum && is_float_table(*a))) {
      const Node& sum = a_sum ? *a : *b;
      const Node& table = a_sum ? *b : *a;
      Node s;
      s.name = n.name;
      s.op_type = "Int8AddTables";
      s.domain = "streamdet";
      s.inputs = {sum.inputs[0], sum.inputs[1], table.inputs[0]};
      s.outputs = n.outputs;
      s.attrs.set("table_a", floats_attr(sum.attrs.get_floats("table_a")));
      s.attrs.set("table_b", floats_attr(sum.attrs.get_floats("table_b")));
      s.attrs.set("table_c", floats_attr(table.attrs.get_floats("table")));
      s.attrs.set("out_dtype", int_attr(1));
      n = std::move(s);
      return true;
    }
    if (!is_float_table(*a) || !is_float_table(*b)) return false;
    Node s;
    s.name = n.name;
    s.op_type = "Int8AddTables";
    s.domain = "streamdet";
    s.inputs = {a->inputs[0], b->inputs[0]};
    s.outputs = n.outputs;
    s.attrs.set("table_a", floats_attr(a->attrs.get_floats("table")));
    s.attrs.set("table_b", floats_attr(b->attrs.get_floats("table")));
    s.attrs.set("out_dtype", int_attr(1));
    n = std::move(s);
    return true;
  }
  return false;
}

}  // namespace

int keep_int8_through_data_ops(Graph& g) {
  int rewrites = 0;
  for (bool again = true; again;) {
    // One rewrite per scan (it may insert or remove nodes), then the index again: a few hundred
    // nodes, a hundred rewrites.
    again = false;
    const Index ix(g);
    for (size_t i = 0; i < g.nodes.size() && !again; ++i) again = rewrite_at(g, i, ix);
    if (again) {
      ++rewrites;
      remove_dead_nodes(g);
    }
  }
  return rewrites;
}

}  // namespace sd::native::passes
