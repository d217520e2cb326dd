// Transpose's 2-D block kernel on the baseline (transpose_kernel.h): 8x8 blocks in GCC's vector
// extension, three rounds of shuffles; and the choice of variant.
#include <cstring>

#include "engine/native/cpu/transpose_kernel.h"

namespace sd::native::ops::transpose {

using u32x8 = uint32_t __attribute__((vector_size(32)));

void block_baseline(const uint32_t* src, int64_t src_ld, uint32_t* dst, int64_t dst_ld, int64_t rows, int64_t cols) {
  int64_t i = 0;
  for (; i + 8 <= rows; i += 8) {
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) {
      u32x8 r[8], t[8], u[8], o[8];
      for (int k = 0; k < 8; ++k) std::memcpy(&r[k], src + (i + k) * src_ld + j, sizeof(u32x8));
      for (int k = 0; k < 8; k += 2) {  // pairs of rows interleaved
        t[k] = __builtin_shufflevector(r[k], r[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[k + 1] = __builtin_shufflevector(r[k], r[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
      }
      for (int k = 0; k < 8; k += 4) {  // quads: columns c and c + 4 of four rows
        u[k] = __builtin_shufflevector(t[k], t[k + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        u[k + 1] = __builtin_shufflevector(t[k], t[k + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        u[k + 2] = __builtin_shufflevector(t[k + 1], t[k + 3], 0, 1, 8, 9, 4, 5, 12, 13);
        u[k + 3] = __builtin_shufflevector(t[k + 1], t[k + 3], 2, 3, 10, 11, 6, 7, 14, 15);
      }
      for (int k = 0; k < 4; ++k) {  // whole columns k and k + 4
        o[k] = __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        o[k + 4] = __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
      }
      for (int k = 0; k < 8; ++k) std::memcpy(dst + (j + k) * dst_ld + i, &o[k], sizeof(u32x8));
    }
    for (; j < cols; ++j)
      for (int64_t k = 0; k < 8; ++k) dst[j * dst_ld + i + k] = src[(i + k) * src_ld + j];
  }
  for (; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[j * dst_ld + i] = src[i * src_ld + j];
}

BlockFn block_kernel(cpu::Isa isa) {
#if defined(__x86_64__)
  if (isa >= cpu::Isa::kAvx2) return block_avx2;
#else
  (void)isa;
#endif
  return block_baseline;
}

}  // namespace sd::native::ops::transpose
