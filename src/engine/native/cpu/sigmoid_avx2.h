// 1 + e^-x on 8 floats with AVX2 + FMA: the SiLU / sigmoid formula of the AVX2 code, shared by
// activation_kernels_avx2.cpp (the standalone pass) and winograd_conv_avx2.cpp (the output
// transform's epilogue), as sigmoid_avx512.h is for AVX-512. Include only from files compiled with
// -march=x86-64-v3.
//
// The same construction as the AVX-512 one, on what AVX2 has: e^-t = 2^(k/8) * e^r with
// k = round(-t * 8 / ln2) and |r| <= ln2/16; 2^(j/8) from an 8-entry table in one register
// (vpermps on 8 lanes), the power of two 2^floor(k/8) built in the exponent bits (AVX2 has no
// vscalefps), e^r a degree-3 polynomial (minimax on that interval, 1.8e-8 relative; float
// rounding brings it to ~1e-7), then one division. It replaced fast_exp_of (a degree-6 polynomial
// and integer conversions) before the same division: 0.37 -> 0.20 ns an element for SiLU on one
// Zen 5 core (docs/benchmarks.md, "SiLU and sigmoid on the AVX2 path").
#pragma once

#include <immintrin.h>

namespace sd::native::ops::avx2_math {

// 2^(j/8), j = 0..7, rounded to float (constant data: see sigmoid_avx512.h).
alignas(32) inline constexpr float kExp2Eighths[8] = {1.0f,        1.09050775f, 1.18920708f, 1.29683959f,
                                                      1.41421354f, 1.54221082f, 1.68179286f, 1.83400810f};

// 1 + e^-x for 8 floats, x clamped to [-80, 80] (e^80 and its reciprocal stay normal floats).
// The clamps take x as their second operand, which vmaxps/vminps return for NaN: NaN stays NaN.
// k is rounded by adding 1.5 * 2^23, which leaves it in the low mantissa bits: the low three
// index the table, the rest (minus the constant's bits) shifted right by 3 is floor(k / 8).
inline __m256 one_plus_exp_neg(__m256 x) {
  const __m256 t = _mm256_min_ps(_mm256_set1_ps(80.0f), _mm256_max_ps(_mm256_set1_ps(-80.0f), x));
  const __m256 magic = _mm256_set1_ps(12582912.0f);
  const __m256 shifted = _mm256_fmadd_ps(t, _mm256_set1_ps(-8 * 1.44269504088896341f), magic);
  const __m256 k = _mm256_sub_ps(shifted, magic);
  // r = -t - k * ln2/8, with ln2/8 in two parts so that the product is exact for |k| <= 2048.
  __m256 r = _mm256_fnmsub_ps(k, _mm256_set1_ps(0.693145751953125f / 8), t);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(1.42860682030941723212e-6f / 8), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(0.16665096580982208f), r, _mm256_set1_ps(0.50007808208465576f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i bits = _mm256_castps_si256(shifted);
  const __m256 frac = _mm256_permutevar8x32_ps(_mm256_load_ps(kExp2Eighths), bits);
  const __m256i whole = _mm256_srai_epi32(_mm256_sub_epi32(bits, _mm256_set1_epi32(0x4B400000)), 3);
  const __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(whole, _mm256_set1_epi32(127)), 23));
  return _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(p, frac), scale), _mm256_set1_ps(1.0f));
}

// x / (1 + e^-x) (SiLU) and 1 / (1 + e^-x) (sigmoid), by vdivps: on 8 floats it measured faster
// on Zen 5 than vrcpps and the two Newton steps it needs (sigmoid(+inf) must be 1: one step left
// 1 / 1 at 1 - 2^-24), 0.20 against 0.31 ns an element, the division issuing beside the
// exponential's ~17 other operations; by port counts no slower on Intel's cores, whose 256-bit
// vdivps issues every 5 cycles. (AVX-512 keeps the reciprocal, sigmoid_avx512.h: Intel's 512-bit
// vdivps issues every 16 cycles; on Zen 5 the division would be 0.76x the pass's time.) NaN
// stays NaN.
inline __m256 silu(__m256 x) { return _mm256_div_ps(x, one_plus_exp_neg(x)); }
inline __m256 sigmoid(__m256 x) { return _mm256_div_ps(_mm256_set1_ps(1.0f), one_plus_exp_neg(x)); }

}  // namespace sd::native::ops::avx2_math
