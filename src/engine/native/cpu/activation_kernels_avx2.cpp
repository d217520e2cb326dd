// SiLU and sigmoid for AVX2 + FMA (compiled with -march=x86-64-v3): sigmoid_avx2.h's table-based
// exponential and reciprocal on 8-float vectors, as activation_kernels_avx512.cpp does with 16.
#define STREAMDET_ISA_VARIANT avx2
#include <immintrin.h>

#include "engine/native/cpu/activation_variants.h"
#include "engine/native/cpu/sigmoid_avx2.h"

namespace sd::native::ops::activation {
namespace {

// y = x / (1 + e^-x) (SiLU) or 1 / (1 + e^-x) (sigmoid).
template <bool kSilu>
inline __m256 activate(__m256 x) {
  return kSilu ? avx2_math::silu(x) : avx2_math::sigmoid(x);
}

// The lanes of a vector at the end of a buffer: the first `left` (1 to 7) of 8.
inline __m256i tail_mask(int64_t left) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(left)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

template <bool kSilu>
void apply(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  // Two independent vectors an iteration: each is a dependency chain of ~15 operations.
  for (; i + 16 <= n; i += 16) {
    const __m256 a = activate<kSilu>(_mm256_loadu_ps(x + i)), b = activate<kSilu>(_mm256_loadu_ps(x + i + 8));
    _mm256_storeu_ps(y + i, a);
    _mm256_storeu_ps(y + i + 8, b);
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, activate<kSilu>(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, activate<kSilu>(_mm256_maskload_ps(x + i, m)));
  }
}

}  // namespace

void silu_avx2(const float* x, float* y, int64_t n) { apply<true>(x, y, n); }
void sigmoid_avx2(const float* x, float* y, int64_t n) { apply<false>(x, y, n); }

}  // namespace sd::native::ops::activation
