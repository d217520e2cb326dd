// Which implementation runs the 3x3 stride-1 convolutions our own Winograd kernel can take
// (cpu/winograd_conv.h), and the 1x1 ones our pointwise kernel can (cpu/pointwise_conv.h): chosen
// per node while planning by timing ours and oneDNN's on the node's shape, or forced (the tests,
// to compare them on one machine; the planner, to make a kernel again as it was chosen).
#pragma once

#include "engine/native/graph.h"

namespace sd::native {

enum class Conv3x3Choice {
  kMeasured,  // from the AVX2 path up (AVX-512 included): the faster of ours and oneDNN's, timed at plan time
  kOneDnn,    // oneDNN's primitive always
  kWinograd,  // our Winograd kernel wherever it applies and the processor has AVX2 + FMA; our 1x1
              // kernel on the 1x1 convolutions where it applies (AVX-512)
  kWinograd6x6,  // the same with F(6x6, 3x3) (each variant, the bf16 one included)
  kPointwise,    // our 1x1 kernel where it applies; the 3x3 convolutions as kMeasured
};

// Set by the loader on every Conv / FusedConv when the choice is forced (absent: kMeasured); the
// value is the enum's.
inline constexpr const char* kConv3x3Choice = "_conv3x3";

// Set by the planner on a convolution whose kernel it makes again (a Concat's rows to write into,
// exec/plan_concat.cpp) where the node was timed to our Winograd under --precision bf16: which
// GEMM the timing took (0: float32, 1: bf16), so that the kernel made again is the same. Absent:
// bf16 under --precision bf16.
inline constexpr const char* kWinoGemmChoice = "_wino_gemm";

// Marks every Conv / FusedConv of `g` with `choice` (nothing for kMeasured); returns how many.
int mark_conv3x3_choice(Graph& g, Conv3x3Choice choice);

// Which candidate runs a convolution that oneDNN can run more than one way: an Int8Conv, among
// oneDNN's int8 implementations for its shape (its first, then the others of the same
// instruction set by name: cpu/dnnl_qconv.cpp says why); a float Conv / FusedConv under --precision bf16 that our Winograd does not take,
// between oneDNN's bf16 convolution (0) and its float32 one (1; more accurate, so always acceptable
// under bf16); an Int8Conv computed without oneDNN's int8 kernels (cpu/int8_conv_in_float.h), between
// float32 (0) and the int16 Winograd (1) where that takes the node. kTimedCandidate: the fastest on
// the node's shape, timed at load (cpu/timed_choice.h);
// else that index, the last candidate where the node has fewer (the tests, to compare them on one
// machine). Candidate 0 is what ran before the timing was added.
inline constexpr int kTimedCandidate = -1;

// Set by the loader on every Conv / FusedConv / Int8Conv when the candidate is forced (absent:
// kTimedCandidate).
inline constexpr const char* kConvCandidate = "_conv_candidate";

// Marks every Conv / FusedConv / Int8Conv of `g` with `candidate` (nothing for kTimedCandidate);
// returns how many.
int mark_conv_candidate(Graph& g, int candidate);

}  // namespace sd::native
