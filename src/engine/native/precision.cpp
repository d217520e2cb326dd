#include "engine/native/precision.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace sd::native {

Result<Precision> resolve_precision(const std::string& text, bool cpu_has_bf16, bool on_cuda) {
  if (text == "auto") return on_cuda ? Precision::kFp16 : Precision::kFp32;
  if (text == "fp32") return Precision::kFp32;
  if (text == "fp16") {
    if (!on_cuda)
      return fail(ErrorCode::kUsage, "--precision fp16: fp16 runs on a CUDA GPU and this model runs on the CPU; use --precision fp32 (or --device cuda)");
    return Precision::kFp16;
  }
  if (text == "bf16") {
    if (!cpu_has_bf16)
      return fail(ErrorCode::kUsage,
                  "--precision bf16: this CPU has no bf16 instructions (avx512_bf16 or AMX); use --precision fp32");
    return Precision::kBf16;
  }
  return fail(ErrorCode::kUsage, "--precision " + text + ": expected auto, fp32, fp16 or bf16");
}

int mark_bf16_convolutions(Graph& g) {
  int marked = 0;
  for (Node& n : g.nodes) {
    if (n.op_type != "Conv" && n.op_type != "FusedConv" && n.op_type != "MatMul") continue;
    Attribute a;
    a.kind = Attribute::Kind::kInt;
    a.i = 1;
    n.attrs.set(kBf16Compute, a);
    ++marked;
  }
  return marked;
}

namespace {

Attribute int_attr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}

// Whether `n` reading value v as its source (input 0) runs oneDNN's bf16 convolution on any
// choice made at load (dnnl_conv.cpp): see keep_bf16_tensors.
bool bf16_convolution_source(const Graph& g, const Node& n, int v) {
  if (n.op_type != "Conv" && n.op_type != "FusedConv") return false;
  if (n.attrs.get_int(kBf16Compute, 0) == 0 || n.attrs.get_int("group", 1) != 1) return false;
  if (n.inputs.empty() || n.inputs[0] != v || n.inputs.size() < 2 || n.inputs[1] < 0) return false;
  for (size_t k = 1; k < n.inputs.size(); ++k)
    if (n.inputs[k] == v) return false;
  if (n.inputs.size() > 3 && n.inputs[3] >= 0) return false;  // a fused residual sum reads float32
  const Value& w = g.values[static_cast<size_t>(n.inputs[1])];
  if (!w.constant || w.constant->shape().rank != 4) return false;
  const Shape& ws = w.constant->shape();
  if (ws[1] < 16) return false;  // the stem kernel's cases have fewer channels
  const auto strides = n.attrs.get_ints("strides", {1, 1});
  const bool strided = std::any_of(strides.begin(), strides.end(), [](int64_t s) { return s > 1; });
  return (ws[2] == 1 && ws[3] == 1) || strided;  // our Winograd takes 3x3 stride 1 only
}

// Whether `n` is a marked 3x3 stride-1 convolution our AVX-512 Winograd takes (see keep_bf16_tensors).
bool bf16_winograd_convolution(const Graph& g, const Node& n) {
  if (n.op_type != "Conv" && n.op_type != "FusedConv") return false;
  if (n.attrs.get_int(kBf16Compute, 0) == 0 || n.attrs.get_int("group", 1) != 1) return false;
  if (n.inputs.size() < 2 || n.inputs[0] < 0 || n.inputs[1] < 0) return false;
  const Value& w = g.values[static_cast<size_t>(n.inputs[1])];
  if (!w.constant || w.constant->shape().rank != 4) return false;
  const Shape& ws = w.constant->shape();
  if (ws[2] != 3 || ws[3] != 3 || ws[0] % 16 != 0 || ws[1] % 16 != 0 || ws[1] < 16) return false;
  const auto ones = [](const std::vector<int64_t>& v) { return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; }); };
  if (!ones(n.attrs.get_ints("strides", {1, 1})) || !ones(n.attrs.get_ints("dilations", {1, 1}))) return false;
  const std::string pad = n.attrs.get_string("auto_pad", "NOTSET");
  return pad == "NOTSET" && n.attrs.get_ints("pads", {0, 0, 0, 0}) == std::vector<int64_t>{1, 1, 1, 1};
}

// Nodes whose outputs are copies of parts of their first input, of any element type: a Split,
// a nearest Resize (cpu/misc_ops.cpp).
bool passes_bf16(const Node& n) {
  if (n.inputs.empty()) return false;
  if (n.op_type == "Split") return true;
  return (n.op_type == "Resize" || n.op_type == "Upsample") && n.attrs.get_string("mode", "nearest") == "nearest";
}

}  // namespace

int keep_bf16_tensors(Graph& g, bool winograd_reads_bf16) {
  std::vector<std::vector<size_t>> readers(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs)
      if (v >= 0) readers[static_cast<size_t>(v)].push_back(i);
  std::vector<bool> is_output(g.values.size(), false);
  for (int v : g.outputs) is_output[static_cast<size_t>(v)] = true;
  // A reader r of value v takes bf16 (see precision.h).
  std::function<bool(size_t, int)> takes_bf16;
  auto all_take_bf16 = [&](int v) {
    const auto& rs = readers[static_cast<size_t>(v)];
    if (is_output[static_cast<size_t>(v)] || rs.empty()) return false;
    return std::all_of(rs.begin(), rs.end(), [&](size_t r) { return takes_bf16(r, v); });
  };
  takes_bf16 = [&](size_t r, int v) {
    const Node& n = g.nodes[r];
    if (n.op_type == "Bf16Concat" || bf16_convolution_source(g, n, v)) return true;
    if (winograd_reads_bf16 && bf16_winograd_convolution(g, n)) {
      // Only as the source and the residual operand (not the weights or the bias).
      for (size_t k = 1; k < n.inputs.size(); ++k)
        if (n.inputs[k] == v && k != 3) return false;
      return true;
    }
    // A Split, or a nearest Resize (YOLOv8's upsampling into the neck's Concats), copies bf16 as
    // it copies float32: readers come later, so its outputs' readers have been decided.
    if (passes_bf16(n) && n.inputs[0] == v) {
      for (size_t k = 1; k < n.inputs.size(); ++k)
        if (n.inputs[k] == v) return false;
      return std::all_of(n.outputs.begin(), n.outputs.end(), [&](int o) { return o >= 0 && all_take_bf16(o); });
    }
    return false;
  };
  // The convolutions among v's readers (through Splits and Resizes) read it bf16: kBf16Source.
  std::function<void(int)> mark_readers = [&](int v) {
    for (size_t r : readers[static_cast<size_t>(v)]) {
      Node& n = g.nodes[r];
      if (passes_bf16(n)) {
        for (int o : n.outputs) mark_readers(o);
      } else if (n.op_type != "Bf16Concat") {
        n.attrs.set(kBf16Source, int_attr(1));
      }
    }
  };
  int kept = 0;
  // Readers come after their producers: from the last node back, a Concat reading a tensor has
  // been decided when the tensor is.
  for (size_t i = g.nodes.size(); i-- > 0;) {
    Node& n = g.nodes[i];
    const bool concat = n.op_type == "Concat", conv = n.op_type == "Conv" || n.op_type == "FusedConv";
    if ((!concat && !conv) || n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs.empty()) continue;
    if (concat && !std::all_of(n.inputs.begin(), n.inputs.end(), [](int x) { return x >= 0; })) continue;
    const int v = n.outputs[0];
    if (!all_take_bf16(v)) continue;
    if (concat)
      n.op_type = "Bf16Concat";
    else
      n.attrs.set(kBf16Output, int_attr(1));
    mark_readers(v);
    ++kept;
  }
  // A Bf16Concat of bf16 inputs only converts nothing: a plain Concat (of bf16), which the planner
  // can place in its readers' rows. Forward, so that a Concat's inputs are known bf16 or not.
  std::vector<bool> bf16(g.values.size(), false);
  for (Node& n : g.nodes) {
    if (n.attrs.get_int(kBf16Output, 0) != 0 || n.op_type == "Bf16Concat") {
      if (n.op_type == "Bf16Concat" && std::all_of(n.inputs.begin(), n.inputs.end(), [&](int x) { return x >= 0 && bf16[static_cast<size_t>(x)]; }))
        n.op_type = "Concat";
      for (int o : n.outputs)
        if (o >= 0) bf16[static_cast<size_t>(o)] = true;
    } else if (passes_bf16(n) && n.inputs[0] >= 0 && bf16[static_cast<size_t>(n.inputs[0])]) {
      for (int o : n.outputs)
        if (o >= 0) bf16[static_cast<size_t>(o)] = true;
    }
  }
  return kept;
}

}  // namespace sd::native
