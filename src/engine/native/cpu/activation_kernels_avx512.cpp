// SiLU and sigmoid with AVX-512 (compiled with -march=x86-64-v4): see activation_kernels.h.
#define STREAMDET_ISA_VARIANT avx512
#include <immintrin.h>

#include "engine/native/cpu/activation_variants.h"
#include "engine/native/cpu/sigmoid_avx512.h"

namespace sd::native::ops::activation {
namespace {

// y = x / (1 + e^-x) (SiLU) or 1 / (1 + e^-x) (sigmoid).
template <bool kSilu>
inline __m512 activate(__m512 x) {
  return kSilu ? avx512_math::silu(x) : avx512_math::sigmoid(x);
}

template <bool kSilu>
void apply(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  // Two independent vectors an iteration: each is a dependency chain of ~10 operations.
  for (; i + 32 <= n; i += 32) {
    const __m512 a = activate<kSilu>(_mm512_loadu_ps(x + i)), b = activate<kSilu>(_mm512_loadu_ps(x + i + 16));
    _mm512_storeu_ps(y + i, a);
    _mm512_storeu_ps(y + i + 16, b);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = static_cast<__mmask16>(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, activate<kSilu>(_mm512_maskz_loadu_ps(m, x + i)));
  }
}
}  // namespace

void silu_avx512(const float* x, float* y, int64_t n) { apply<true>(x, y, n); }
void sigmoid_avx512(const float* x, float* y, int64_t n) { apply<false>(x, y, n); }

}  // namespace sd::native::ops::activation
