// Transpose's 2-D block kernel for AVX2 (compiled with -march=x86-64-v3; transpose_kernel.h):
// 8x8 blocks of 32-bit elements in eight ymm registers, transposed by unpacks (pairs of rows),
// shuffles (quads) and 128-bit lane permutes (halves), the ragged edges element by element.
#define STREAMDET_ISA_VARIANT avx2
#include <immintrin.h>

#include "engine/native/cpu/transpose_kernel.h"

namespace sd::native::ops::transpose {

void block_avx2(const uint32_t* src, int64_t src_ld, uint32_t* dst, int64_t dst_ld, int64_t rows, int64_t cols) {
  const float* s = reinterpret_cast<const float*>(src);
  float* d = reinterpret_cast<float*>(dst);
  int64_t i = 0;
  for (; i + 8 <= rows; i += 8) {
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) {
      __m256 r[8];
      for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(s + (i + k) * src_ld + j);
      __m256 t[8], u[8];
      for (int k = 0; k < 8; k += 2) {  // rows k, k + 1 interleaved: (a0 b0 a1 b1 | a4 b4 a5 b5), (a2 b2 a3 b3 | a6 b6 a7 b7)
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
      }
      for (int k = 0; k < 8; k += 4) {  // four rows' columns 0, 1, 2, 3 within each 128-bit lane
        u[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
      }
      for (int k = 0; k < 4; ++k) {  // whole columns k (low lanes) and k + 4 (high lanes)
        _mm256_storeu_ps(d + (j + k) * dst_ld + i, _mm256_permute2f128_ps(u[k], u[k + 4], 0x20));
        _mm256_storeu_ps(d + (j + k + 4) * dst_ld + i, _mm256_permute2f128_ps(u[k], u[k + 4], 0x31));
      }
    }
    for (; j < cols; ++j)
      for (int64_t k = 0; k < 8; ++k) dst[j * dst_ld + i + k] = src[(i + k) * src_ld + j];
  }
  for (; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[j * dst_ld + i] = src[i * src_ld + j];
}

}  // namespace sd::native::ops::transpose
