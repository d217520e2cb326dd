// 1 + e^-x on 16 floats with AVX-512: the one SiLU / sigmoid formula of the AVX-512 code, shared
// by activation_kernels_avx512.cpp (the standalone pass) and winograd_conv_avx512.cpp (the
// output transform's epilogue), so that both stay within the 1e-6 relative error that
// NativeEngine.SiluAndSigmoidKernelsMatchTheExactValues asserts. Include only from files
// compiled with -march=x86-64-v4.
#pragma once

#include <immintrin.h>

// GCC 12's AVX-512 intrinsics pass `_mm512_undefined_ps()` (a self-initialized variable) as the
// unused merge source of vmaxps/vminps/vscalefps, which -O3 reports as maybe-uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace sd::native::ops::avx512_math {

// 2^(j/16), j = 0..15, rounded to float: one register, indexed by vpermps. Constant data, not
// computed at start-up: the code that reads it runs only on AVX-512 processors, its static
// initializers would run on all of them.
alignas(64) inline constexpr float kExp2Sixteenths[16] = {1.0f, 1.04427373f, 1.09050775f, 1.13878858f, 1.18920708f, 1.24185777f, 1.29683959f, 1.35425556f, 1.41421354f, 1.47682619f, 1.54221082f, 1.61049032f, 1.68179286f, 1.75625217f, 1.8340081f, 1.91520655f};

// 1 + e^-x for 16 floats, x clamped to [-80, 80] (e^80 stays a normal float, so the division
// after it never meets an infinity or a denormal). The clamps take x as their second operand,
// the one vmaxps/vminps return for NaN, so NaN goes through as NaN.
//
// e^-t = 2^(k/16) * e^r with k = round(-t * 16 / ln2) and |r| <= ln2/32: 2^(k/16) is a table
// entry (the low 4 bits of k) scaled by 2^floor(k/16) (vscalefps), e^r a degree-2 minimax
// polynomial (Lawson's algorithm, 4.2e-7 relative on that interval). k is rounded by adding
// 1.5 * 2^23, which leaves it in the low mantissa bits: those bits index the table directly.
inline __m512 one_plus_exp_neg(__m512 x) {
  const __m512 t = _mm512_min_ps(_mm512_set1_ps(80.0f), _mm512_max_ps(_mm512_set1_ps(-80.0f), x));
  const __m512 magic = _mm512_set1_ps(12582912.0f);
  const __m512 shifted = _mm512_fmadd_ps(t, _mm512_set1_ps(-16 * 1.44269504088896341f), magic);
  const __m512 k = _mm512_sub_ps(shifted, magic);
  // r = -t - k * ln2/16, with ln2/16 in two parts so that the product is exact for |k| <= 2048.
  __m512 r = _mm512_fnmsub_ps(k, _mm512_set1_ps(0.693145751953125f / 16), t);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(1.42860682030941723212e-6f / 16), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(0.49998530745506287f), r, _mm512_set1_ps(1.000058650970459f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  const __m512 table = _mm512_load_ps(kExp2Sixteenths);
  const __m512 frac = _mm512_permutexvar_ps(_mm512_castps_si512(shifted), table);
  const __m512 e = _mm512_scalef_ps(_mm512_mul_ps(p, frac), _mm512_mul_ps(k, _mm512_set1_ps(1.0f / 16)));
  return _mm512_add_ps(e, _mm512_set1_ps(1.0f));
}

// 1 / d for d in [1, e^80] (one_plus_exp_neg's range) or NaN: vrcp14ps (relative error below
// 2^-14) and one Newton step, r + r (1 - d r), which squares that error to below 2^-28, so the
// result is within a few ulps of the quotient. vdivps on 16 floats was the largest single cost of
// the SiLU in Winograd's output transform (perf, Zen); the reciprocal and two FMAs issue in a
// fraction of its time. NaN stays NaN.
inline __m512 reciprocal(__m512 d) {
  const __m512 r = _mm512_rcp14_ps(d);
  return _mm512_fmadd_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(1.0f)), r);
}

// x / (1 + e^-x) (SiLU) and 1 / (1 + e^-x) (sigmoid).
inline __m512 silu(__m512 x) { return _mm512_mul_ps(x, reciprocal(one_plus_exp_neg(x))); }
inline __m512 sigmoid(__m512 x) { return reciprocal(one_plus_exp_neg(x)); }

}  // namespace sd::native::ops::avx512_math
