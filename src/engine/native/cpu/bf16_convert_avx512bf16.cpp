// floats_to_bf16_rows with AVX512_BF16 (compiled with its flags, called only where active_isa()
// has it): vcvtne2ps2bf16, 32 floats an instruction, the rounding of the reference
// (bf16_convert.h) by the processor itself.
#include <immintrin.h>

#include "engine/native/cpu/bf16_convert.h"

namespace sd::native::ops {

void floats_to_bf16_rows_avx512bf16(const float* src, size_t src_stride, uint16_t* dst, size_t dst_stride, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float* s = src + r * src_stride;
    uint16_t* d = dst + r * dst_stride;
    size_t c = 0;
    for (; c + 32 <= cols; c += 32) {
      const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + c + 16), _mm512_loadu_ps(s + c));
      _mm512_storeu_si512(d + c, (__m512i)v);
    }
    if (c + 16 <= cols) {
      const __m256bh v = _mm512_cvtneps_pbh(_mm512_loadu_ps(s + c));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + c), (__m256i)v);
      c += 16;
    }
    if (c < cols) {
      const __mmask16 m = static_cast<__mmask16>((1u << (cols - c)) - 1u);
      const __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, s + c));
      _mm256_mask_storeu_epi16(d + c, m, (__m256i)v);
    }
  }
}

}  // namespace sd::native::ops
