// PointwiseConv's kernel for AVX-512 (compiled with -march=x86-64-v4; pointwise_conv.h): per
// block of pixels and panel of up to 64 output channels, a 6x64 FMA micro-kernel whose
// accumulators start at the bias and end in the epilogue, stored once where the strides say.
#define STREAMDET_ISA_VARIANT avx512
#include <immintrin.h>

#include <algorithm>

#include "engine/native/cpu/epilogue_avx512.h"
#include "engine/native/cpu/pointwise_conv.h"
#include "engine/native/cpu/sigmoid_avx512.h"
#include "engine/native/parallel.h"

namespace sd::native::ops::pointwise {
namespace {

// This file's vectors for the shared micro-kernel (pointwise_conv_float.inc).
struct Ops {
  using V = __m512;
  static constexpr int64_t kLanes = 16;
  static V loadu(const float* p) { return _mm512_loadu_ps(p); }
  static V broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static V fmadd(V x, V y, V z) { return _mm512_fmadd_ps(x, y, z); }
  static void storeu(float* p, V x) { _mm512_storeu_ps(p, x); }
  static V silu(V x) { return avx512_math::silu(x); }
  static V epilogue(const WinoPost* posts, int64_t count, V x, const float* sum, int64_t at) {
    return avx512_epilogue::apply(posts, count, x, sum, at);
  }
};

#include "engine/native/cpu/pointwise_conv_float.inc"
#include "engine/native/cpu/pointwise_conv_blocks.inc"

}  // namespace

void run_avx512(const RunArgs& a) { run_blocks<16>(a, a.packed); }

}  // namespace sd::native::ops::pointwise
