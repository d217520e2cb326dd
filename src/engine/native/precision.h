// --precision: the arithmetic of the native engine, chosen at load: the CPU's convolutions in
// float32 or bf16, the GPU's tensors in fp16 or float32.
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
  // Float tensors on the CUDA backend stored and computed in fp16 (float32 arithmetic and
  // accumulation in the kernels, cuDNN's tensor cores for convolutions); the CPU's nodes, the
  // inputs and the outputs stay float32 (SessionOptions::device_fp16).
  kFp16,
};

// Set by the loader on convolutions that run in bf16 (kernels read it like the layout attributes).
inline constexpr const char* kBf16Compute = "_bf16";
// Set by keep_bf16_concats on a bf16 convolution whose source is a bf16 tensor (a Bf16Concat's
// output): it runs oneDNN's bf16 kernel on it directly, no conversion, no float32 candidate.
inline constexpr const char* kBf16Source = "_bf16_src";

// "auto": kFp16 when the model runs on a CUDA backend (`on_cuda`), else kFp32 (auto keeps float32
// on the CPU: bf16 costs accuracy and is asked for). "fp32": kFp32. "bf16": kBf16 where
// `cpu_has_bf16`, else a kUsage error of one line. "fp16": kFp16 on a CUDA backend, else a kUsage
// error of one line (the CPU has no fp16 path). Anything else: kUsage. The CPU's and the device's
// answers are parameters so that the refusals can be tested anywhere.
Result<Precision> resolve_precision(const std::string& text, bool cpu_has_bf16, bool on_cuda = false);

// Marks every Conv / FusedConv / MatMul of `g` with kBf16Compute (the kernels run float32 ones
// in bf16: MatMul where B is constant; a model's Int8Conv stays int8); returns how many.
int mark_bf16_convolutions(Graph& g);

// After mark_bf16_convolutions: every Concat whose output is read only as the source of marked
// convolutions that oneDNN runs in bf16 whatever the timing at load picks (1x1 or strided, 16
// input channels or more, one group, no fused residual sum: neither our Winograd nor the stem
// kernel takes them) becomes a Bf16Concat (cpu/concat_bf16.cpp) writing bf16, and its readers
// get kBf16Source. Their results are bit for bit those of converting the float32 Concat in each
// convolution (the same rounding, cpu/bf16_convert.h), without the conversions (YOLOv8n: the
// C2f and neck Concats, ~0.5 ms of a ~10 ms run; docs/benchmarks.md). Returns how many Concats.
int keep_bf16_concats(Graph& g);

}  // namespace sd::native
