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
// Set by keep_bf16_tensors on a bf16 convolution whose source is a bf16 tensor: it runs oneDNN's
// bf16 kernel on it directly, no conversion, no float32 candidate.
inline constexpr const char* kBf16Source = "_bf16_src";
// Set by keep_bf16_tensors on a convolution whose result is kept bf16: whatever kernel runs it
// writes float32 into scratch, and the pass that finishes the result (our post ops) writes bf16.
inline constexpr const char* kBf16Output = "_bf16_dst";

// "auto": kFp16 when the model runs on a CUDA backend (`on_cuda`), else kFp32 (auto keeps float32
// on the CPU: bf16 costs accuracy and is asked for). "fp32": kFp32. "bf16": kBf16 where
// `cpu_has_bf16`, else a kUsage error of one line. "fp16": kFp16 on a CUDA backend, else a kUsage
// error of one line (the CPU has no fp16 path). Anything else: kUsage. The CPU's and the device's
// answers are parameters so that the refusals can be tested anywhere.
Result<Precision> resolve_precision(const std::string& text, bool cpu_has_bf16, bool on_cuda = false);

// Marks every Conv / FusedConv / MatMul of `g` with kBf16Compute (the kernels run float32 ones
// in bf16: MatMul where B is constant; a model's Int8Conv stays int8); returns how many.
int mark_bf16_convolutions(Graph& g);

// After mark_bf16_convolutions: the tensors every reader of which takes bf16 are kept bf16. A
// reader takes bf16:
//  - as the source of a marked convolution that oneDNN runs in bf16 whatever the timing at load
//    picks (1x1 or strided, 16 input channels or more, one group, no fused residual sum);
//  - where `winograd_reads_bf16` (our kernels not excluded by a forced choice), as the source or
//    the fused residual operand of a marked 3x3 stride-1 convolution that our AVX-512 Winograd
//    takes (pad 1, one group, channels and output channels multiples of 16: dnnl_conv.cpp runs it
//    there, rounding float32 inputs to bf16 as read, so bf16 tensors change no bits);
//  - as an input of a Concat kept bf16, or of a Split or a nearest Resize whose every output is
//    kept bf16 (they copy bf16 as they copy float32).
// Either kind of convolution reader gets kBf16Source. Kept: a Concat's output (a Bf16Concat,
// cpu/concat_bf16.cpp, converting its float32 inputs while copying; a plain Concat of bf16 where
// every input is bf16, which the planner can place in its readers' rows) and a Conv / FusedConv's
// result (kBf16Output); a Split or nearest Resize of a bf16 tensor has bf16 outputs.
// The convolutions' results are bit for bit those of converting the float32 tensors in each
// convolution (the same rounding, cpu/bf16_convert.h), without the conversions (YOLOv8n: ~1 ms
// of a ~10 ms run, docs/benchmarks.md). Returns how many tensors.
int keep_bf16_tensors(Graph& g, bool winograd_reads_bf16 = true);

}  // namespace sd::native
