// quantize_nhwc.h's three-channel row, AVX-512 with VBMI (its own target attribute, taken where
// CPUID has it): 16 pixels of each channel quantized as QuantizeLinear does (divide, round half
// to even, add the zero point, NaN to 0, clamp), narrowed to bytes, and the 48 bytes put in pixel
// order by one vpermb.
#include <immintrin.h>

#include "engine/native/cpu/quantize_nhwc.h"

namespace sd::native::ops {

__attribute__((target("avx512vbmi"))) void quantize3_row_avx512_vbmi(const float* x, int64_t plane, int64_t len, float s, int32_t z,
                                                                     bool is_signed, uint8_t* y) {
  const __m512 vs = _mm512_set1_ps(s), vz = _mm512_set1_ps(static_cast<float>(z));
  const __m512 lo = _mm512_set1_ps(is_signed ? -128.f : 0.f), hi = _mm512_set1_ps(is_signed ? 127.f : 255.f);
  alignas(64) uint8_t order[64] = {};
  for (int k = 0; k < 48; ++k) order[k] = static_cast<uint8_t>((k % 3) * 16 + k / 3);  // byte k: pixel k / 3, channel k % 3
  const __m512i perm = _mm512_load_si512(order);
  auto quantize16 = [&](const float* p, __mmask16 m) {
    __m512 r = _mm512_add_ps(_mm512_roundscale_ps(_mm512_div_ps(_mm512_maskz_loadu_ps(m, p), vs), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), _mm512_setzero_ps());
    r = _mm512_min_ps(_mm512_max_ps(r, lo), hi);
    return _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(r));  // exact integers in range: their low bytes
  };
  for (int64_t i = 0; i < len; i += 16) {
    const int64_t n = len - i < 16 ? len - i : 16;
    const auto m = static_cast<__mmask16>((1u << n) - 1);
    __m512i v = _mm512_castsi128_si512(quantize16(x + i, m));
    v = _mm512_inserti32x4(v, quantize16(x + plane + i, m), 1);
    v = _mm512_inserti32x4(v, quantize16(x + 2 * plane + i, m), 2);
    _mm512_mask_storeu_epi8(y + 3 * i, _cvtu64_mask64((1ULL << (3 * n)) - 1), _mm512_permutexvar_epi8(perm, v));
  }
}

}  // namespace sd::native::ops
