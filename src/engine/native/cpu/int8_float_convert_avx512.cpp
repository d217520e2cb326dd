// int8_float_convert.h's AVX-512 variants (compiled with the AVX-512 flags, CMakeLists.txt): 16
// values a vector, masked tails; a fused table looked up over the bytes after (byte_table_kernel.h).
#include <immintrin.h>

#include "engine/native/cpu/int8_float_convert.h"

#include "engine/native/cpu/byte_table_kernel.h"

namespace sd::native::ops::int8_float {

void dequantize_avx512(const uint8_t* x, int64_t n, const Quantization& q, float* y) {
  const __m512i z = _mm512_set1_epi32(q.zero_point);
  const __m512 s = _mm512_set1_ps(q.scale);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m128i b = _mm_maskz_loadu_epi8(m, x + i);
    const __m512i v = q.is_signed ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(v, z)), s));
  }
}

void quantize_avx512(const float* x, int64_t n, const Quantization& q, const uint8_t* table, uint8_t* y) {
  if (table) {
    // The bytes, then the table over them in place (VBMI's vpermi2b where the processor has it,
    // else AVX-512 BW's shuffles): per-value gathers of the entries took 3x as long.
    quantize_avx512(x, n, q, nullptr, y);
    byte_table::lookup_avx512(y, y, n, table);
    return;
  }
  const __m512 s = _mm512_set1_ps(q.scale), zf = _mm512_set1_ps(static_cast<float>(q.zero_point));
  const __m512 lo = _mm512_set1_ps(q.is_signed ? -128.f : 0.f), hi = _mm512_set1_ps(q.is_signed ? 127.f : 255.f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - i)) - 1);
    __m512 r = _mm512_add_ps(_mm512_roundscale_ps(_mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zf);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), _mm512_setzero_ps());  // NaN -> 0
    r = _mm512_min_ps(_mm512_max_ps(r, lo), hi);
    _mm_mask_storeu_epi8(y + i, m, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(r)));
  }
}

}  // namespace sd::native::ops::int8_float
