#include "engine/native/cpu/bf16_convert.h"

#include "core/cpu_isa.h"

namespace sd::native::ops {

void floats_to_bf16_rows_portable(const float* src, size_t src_stride, uint16_t* dst, size_t dst_stride, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) dst[r * dst_stride + c] = float_to_bf16_rne(src[r * src_stride + c]);
}

bool floats_to_bf16_is_vectorised() {
#if defined(__x86_64__)
  return cpu::active_isa() >= cpu::Isa::kAvx512Bf16;
#else
  return false;
#endif
}

void floats_to_bf16_rows(const float* src, size_t src_stride, uint16_t* dst, size_t dst_stride, size_t rows, size_t cols) {
#if defined(__x86_64__)
  if (floats_to_bf16_is_vectorised()) return floats_to_bf16_rows_avx512bf16(src, src_stride, dst, dst_stride, rows, cols);
  if (cpu::active_isa() >= cpu::Isa::kAvx512) return floats_to_bf16_rows_avx512(src, src_stride, dst, dst_stride, rows, cols);
#endif
  floats_to_bf16_rows_portable(src, src_stride, dst, dst_stride, rows, cols);
}

}  // namespace sd::native::ops
