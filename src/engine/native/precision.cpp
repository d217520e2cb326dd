#include "engine/native/precision.h"

#include <algorithm>
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

}  // namespace

int keep_bf16_tensors(Graph& g) {
  std::vector<std::vector<size_t>> readers(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs)
      if (v >= 0) readers[static_cast<size_t>(v)].push_back(i);
  std::vector<bool> is_output(g.values.size(), false);
  for (int v : g.outputs) is_output[static_cast<size_t>(v)] = true;
  int kept = 0;
  // Readers come after their producers: from the last node back, a Concat reading a tensor has
  // been decided when the tensor is.
  for (size_t i = g.nodes.size(); i-- > 0;) {
    Node& n = g.nodes[i];
    const bool concat = n.op_type == "Concat", conv = n.op_type == "Conv" || n.op_type == "FusedConv";
    if ((!concat && !conv) || n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs.empty()) continue;
    if (concat && !std::all_of(n.inputs.begin(), n.inputs.end(), [](int x) { return x >= 0; })) continue;
    const int v = n.outputs[0];
    const auto& rs = readers[static_cast<size_t>(v)];
    if (is_output[static_cast<size_t>(v)] || rs.empty()) continue;
    auto takes_bf16 = [&](size_t r) { return g.nodes[r].op_type == "Bf16Concat" || bf16_convolution_source(g, g.nodes[r], v); };
    if (!std::all_of(rs.begin(), rs.end(), takes_bf16)) continue;
    if (concat)
      n.op_type = "Bf16Concat";
    else
      n.attrs.set(kBf16Output, int_attr(1));
    for (size_t r : rs)
      if (g.nodes[r].op_type != "Bf16Concat") g.nodes[r].attrs.set(kBf16Source, int_attr(1));
    ++kept;
  }
  return kept;
}

}  // namespace sd::native
