// floats_to_bf16_rows with AVX-512F only (compiled with its flags, called only where active_isa()
// has it and not AVX512_BF16): the rounding of bf16_round_avx512.h in integer instructions, the
// path our float32 AVX-512 Winograd takes to write bf16; tested here against the reference.
#include "engine/native/cpu/bf16_convert.h"
#include "engine/native/cpu/bf16_round_avx512.h"

namespace sd::native::ops {

void floats_to_bf16_rows_avx512(const float* src, size_t src_stride, uint16_t* dst, size_t dst_stride, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float* s = src + r * src_stride;
    uint16_t* d = dst + r * dst_stride;
    size_t c = 0;
    for (; c + 16 <= cols; c += 16) store_bf16_avx512(d + c, _mm512_loadu_ps(s + c));
    if (c < cols) {
      const __mmask16 m = static_cast<__mmask16>((1u << (cols - c)) - 1u);
      _mm256_mask_storeu_epi16(d + c, m, round_to_bf16_avx512(_mm512_maskz_loadu_ps(m, s + c)));
    }
  }
}

}  // namespace sd::native::ops
