// WinogradConv's kernel for AVX2 + FMA (compiled with -march=x86-64-v3; winograd_conv.h): per
// block of tiles, the input transform into V[P][tiles][c], P GEMMs V[p] x U[p] into
// M[P][tiles][oc] with a 6x16 FMA micro-kernel (12 accumulators, 2 weight vectors, 6
// broadcasts: 15 of the 16 registers), then the output transform with the epilogue, written NHWC.
// P = 36 for F(4x4, 3x3), 64 for F(6x6, 3x3) (the tile RunArgs asks for).
#define STREAMDET_ISA_VARIANT avx2
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "engine/native/cpu/epilogue_avx2.h"
#include "engine/native/cpu/sigmoid_avx2.h"
#include "engine/native/cpu/thread_floats.h"
#include "engine/native/cpu/winograd_conv.h"
#include "engine/native/parallel.h"

namespace sd::native::ops::wino {
namespace {

#include "engine/native/cpu/winograd_avx2_common.inc"

// c[R][NR] = a[R][k] x b[k][NR]: a's rows lda apart, b packed [k][NR], c's rows ldc apart. R = 6
// but for a block's last rows (multiply).
template <int NR, int R>
inline void micro_kernel(const float* a, int64_t lda, const float* b, int64_t k, float* c, int64_t ldc) {
  constexpr int kV = NR / 8;
  V8 acc[R][kV];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int q = 0; q < kV; ++q) acc[r][q] = _mm256_setzero_ps();
  const float* ar[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) ar[r] = a + r * lda;
  for (int64_t i = 0; i < k; ++i) {
    V8 bv[kV];
#pragma GCC unroll 2
    for (int q = 0; q < kV; ++q) bv[q] = _mm256_loadu_ps(b + i * NR + q * 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const V8 av = _mm256_broadcast_ss(ar[r] + i);
#pragma GCC unroll 2
      for (int q = 0; q < kV; ++q) acc[r][q] = _mm256_fmadd_ps(av, bv[q], acc[r][q]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int q = 0; q < kV; ++q) _mm256_storeu_ps(c + r * ldc + q * 8, acc[r][q]);
}

// The micro-kernel for `rows` (1 to 6) rows of a.
template <int NR>
inline void micro_rows(int64_t rows, const float* a, int64_t lda, const float* b, int64_t k, float* c, int64_t ldc) {
  switch (rows) {
    case 6: micro_kernel<NR, 6>(a, lda, b, k, c, ldc); break;
    case 5: micro_kernel<NR, 5>(a, lda, b, k, c, ldc); break;
    case 4: micro_kernel<NR, 4>(a, lda, b, k, c, ldc); break;
    case 3: micro_kernel<NR, 3>(a, lda, b, k, c, ldc); break;
    case 2: micro_kernel<NR, 2>(a, lda, b, k, c, ldc); break;
    default: micro_kernel<NR, 1>(a, lda, b, k, c, ldc); break;
  }
}

// M[p] = V[p] x U[p] for the 36 or 64 positions, the block's `count` tiles only (its padding
// rows are not multiplied: a layer's last block is often short).
void multiply(const RunArgs& a, const Tiling& d, int64_t tpad, int64_t count, const float* v, float* m) {
  const int64_t C = d.c, OC = d.oc;
  for (int64_t p = 0; p < d.positions; ++p) {
    const float* vp = v + p * tpad * C;
    float* mp = m + p * tpad * OC;
    const float* up = a.packed + p * C * OC;
    for (int64_t o0 = 0; o0 < OC; o0 += 16) {
      const float* panel = up + o0 * C;
      if (OC - o0 >= 16) {
        for (int64_t t = 0; t < count; t += 6) micro_rows<16>(std::min<int64_t>(6, count - t), vp + t * C, C, panel, C, mp + t * OC + o0, OC);
      } else {
        for (int64_t t = 0; t < count; t += 6) micro_rows<8>(std::min<int64_t>(6, count - t), vp + t * C, C, panel, C, mp + t * OC + o0, OC);
      }
    }
  }
}

}  // namespace

void run_avx2(const RunArgs& a) {
  const auto mul = [&](const Tiling& d, int64_t tpad, int64_t count, const float* v, float* m) { multiply(a, d, tpad, count, v, m); };
  run_tiles<float>(a, mul);
}

}  // namespace sd::native::ops::wino
