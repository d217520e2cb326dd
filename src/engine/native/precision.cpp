#include "engine/native/precision.h"

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

}  // namespace sd::native
