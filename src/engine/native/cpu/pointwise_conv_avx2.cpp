// PointwiseConv's kernel for AVX2 + FMA (compiled with -march=x86-64-v3; pointwise_conv.h): per
// block of pixels and panel of 16 output channels (the last 8), a 6x16 FMA micro-kernel (12
// accumulators, 2 weight vectors, a broadcast: 15 of the 16 registers) whose accumulators start
// at the bias and end in the epilogue, stored once where the strides say.
#define STREAMDET_ISA_VARIANT avx2
#include <immintrin.h>

#include <algorithm>

#include "engine/native/cpu/epilogue_avx2.h"
#include "engine/native/cpu/pointwise_conv.h"
#include "engine/native/cpu/sigmoid_avx2.h"
#include "engine/native/parallel.h"

namespace sd::native::ops::pointwise {
namespace {

// This file's vectors for the shared micro-kernel (pointwise_conv_float.inc).
struct Ops {
  using V = __m256;
  static constexpr int64_t kLanes = 8;
  static V loadu(const float* p) { return _mm256_loadu_ps(p); }
  static V broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V fmadd(V x, V y, V z) { return _mm256_fmadd_ps(x, y, z); }
  static void storeu(float* p, V x) { _mm256_storeu_ps(p, x); }
  static V silu(V x) { return avx2_math::silu(x); }
  static V epilogue(const WinoPost* posts, int64_t count, V x, const float* sum, int64_t at) {
    return avx2_epilogue::apply(posts, count, x, sum, at);
  }
};

#include "engine/native/cpu/pointwise_conv_float.inc"
#include "engine/native/cpu/pointwise_conv_blocks.inc"

}  // namespace

void run_avx2(const RunArgs& a) { run_blocks<8>(a, a.packed); }

}  // namespace sd::native::ops::pointwise
