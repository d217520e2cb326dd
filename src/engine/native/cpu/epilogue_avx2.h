// The FusedConv epilogue (conv_attrs.h's post ops, in order, after the bias) on 8 output channels
// in an AVX2 register: shared by our Winograd's output transform (winograd_conv_avx2.cpp) and our
// 1x1 convolution (pointwise_conv_avx2.cpp). Include only from files compiled with -march=x86-64-v3.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "engine/native/cpu/sigmoid_avx2.h"
#include "engine/native/cpu/winograd_conv.h"

namespace sd::native::ops::avx2_epilogue {

// posts[0, count) on x; `sum` + `at` is the residual operand's 8 floats (a kSum's).
inline __m256 apply(const WinoPost* posts, int64_t count, __m256 x, const float* sum, int64_t at) {
  for (int64_t i = 0; i < count; ++i) {
    const WinoPost& p = posts[i];
    switch (p.kind) {
      case WinoPostKind::kRelu: x = _mm256_max_ps(x, _mm256_setzero_ps()); break;
      case WinoPostKind::kLeakyRelu: {
        const __m256 neg = _mm256_mul_ps(x, _mm256_set1_ps(p.alpha));
        x = _mm256_blendv_ps(x, neg, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
        break;
      }
      // The AVX2 activation kernels' table-based exp and reciprocal (sigmoid_avx2.h).
      case WinoPostKind::kSilu: x = avx2_math::silu(x); break;
      case WinoPostKind::kSigmoid: x = avx2_math::sigmoid(x); break;
      case WinoPostKind::kHardSwish: {
        const __m256 g = _mm256_fmadd_ps(x, _mm256_set1_ps(1.f / 6.f), _mm256_set1_ps(0.5f));
        x = _mm256_mul_ps(x, _mm256_min_ps(_mm256_max_ps(g, _mm256_setzero_ps()), _mm256_set1_ps(1.f)));
        break;
      }
      case WinoPostKind::kClip: x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(p.alpha)), _mm256_set1_ps(p.beta)); break;
      case WinoPostKind::kSum: x = _mm256_add_ps(x, _mm256_loadu_ps(sum + at)); break;
    }
  }
  return x;
}

}  // namespace sd::native::ops::avx2_epilogue
