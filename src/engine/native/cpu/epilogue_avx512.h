// The FusedConv epilogue (conv_attrs.h's post ops, in order, after the bias) on 16 output
// channels in an AVX-512 register: shared by our Winograd's output transform
// (winograd_avx512_common.inc) and our 1x1 convolution (pointwise_conv_avx512.cpp). Include only
// from files compiled with -march=x86-64-v4.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "engine/native/cpu/sigmoid_avx512.h"
#include "engine/native/cpu/winograd_conv.h"

namespace sd::native::ops::avx512_epilogue {

// posts[0, count) on x; load_sum() gives the residual operand's 16 floats (a kSum's).
template <class LoadSum>
inline __m512 apply_with(const WinoPost* posts, int64_t count, __m512 x, LoadSum load_sum) {
  for (int64_t i = 0; i < count; ++i) {
    const WinoPost& p = posts[i];
    switch (p.kind) {
      case WinoPostKind::kRelu: x = _mm512_max_ps(x, _mm512_setzero_ps()); break;
      case WinoPostKind::kLeakyRelu:
        x = _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), x, _mm512_set1_ps(p.alpha));
        break;
      // The AVX-512 activation kernels' table-based exp (sigmoid_avx512.h): a degree-2
      // polynomial and a 16-entry table in a register instead of fast_exp_of's degree-6.
      case WinoPostKind::kSilu: x = avx512_math::silu(x); break;
      case WinoPostKind::kSigmoid: x = avx512_math::sigmoid(x); break;
      case WinoPostKind::kHardSwish: {
        const __m512 g = _mm512_fmadd_ps(x, _mm512_set1_ps(1.f / 6.f), _mm512_set1_ps(0.5f));
        x = _mm512_mul_ps(x, _mm512_min_ps(_mm512_max_ps(g, _mm512_setzero_ps()), _mm512_set1_ps(1.f)));
        break;
      }
      case WinoPostKind::kClip: x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(p.alpha)), _mm512_set1_ps(p.beta)); break;
      case WinoPostKind::kSum: x = _mm512_add_ps(x, load_sum()); break;
    }
  }
  return x;
}

// The same with the residual operand at `sum` + `at` in float32.
inline __m512 apply(const WinoPost* posts, int64_t count, __m512 x, const float* sum, int64_t at) {
  return apply_with(posts, count, x, [&] { return _mm512_loadu_ps(sum + at); });
}

}  // namespace sd::native::ops::avx512_epilogue
