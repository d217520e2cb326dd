// --precision: the arithmetic of the native engine's CPU convolutions, chosen at load.
#pragma once

#include <string>

#include "core/error.h"
#include "engine/native/graph.h"

namespace sd::native {

enum class Precision {
  kFp32,  // float32 throughout
  // Convolutions (and MatMul with constant weights) in oneDNN with bf16 weights and source
  // (float32 accumulation, float32 result, bias and post ops); everything else float32. Needs avx512_bf16 or AMX (cpu/bf16_support.h).
  kBf16,
};

// Set by the loader on convolutions that run in bf16 (kernels read it like the layout attributes).
inline constexpr const char* kBf16Compute = "_bf16";

// "auto" and "fp32": kFp32 (auto keeps float32 on the CPU: bf16 costs accuracy and is asked for);
// "bf16": kBf16 where `cpu_has_bf16`, else a kUsage error of one line. Anything else: kUsage.
// The CPU's answer is a parameter so that the refusal can be tested on a machine that has bf16.
Result<Precision> resolve_precision(const std::string& text, bool cpu_has_bf16);

// Marks every Conv / FusedConv / MatMul of `g` with kBf16Compute (the kernels run float32 ones
// in bf16: MatMul where B is constant; a model's Int8Conv stays int8); returns how many.
int mark_bf16_convolutions(Graph& g);

}  // namespace sd::native
