// WinogradConv's kernel for AVX-512 (compiled with -march=x86-64-v4; winograd_conv.h): the AVX2
// kernel's steps with 16 channels a register. Per block of six tiles, the input transform into
// V[P][6][c], P GEMMs V[p] x U[p] into M[P][6][oc] with a 6x64 FMA micro-kernel (24
// accumulators and 4 weight vectors of the 32 registers; 4 weight loads and 6 broadcasts per 24
// FMAs), then the output transform with the epilogue. P = 36 for F(4x4, 3x3), 64 for F(6x6, 3x3)
// (the tile RunArgs asks for).
// Needs channels and output channels multiples of 16 (the constructor falls back to AVX2 else).
#define STREAMDET_ISA_VARIANT avx512
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "engine/native/cpu/bf16_round_avx512.h"
#include "engine/native/cpu/sigmoid_avx512.h"
#include "engine/native/cpu/winograd_conv.h"
#include "engine/native/parallel.h"

namespace sd::native::ops::wino {
namespace {

#include "engine/native/cpu/winograd_avx512_common.inc"

// c[6][16 * NV] = a[6][k] x b[k][16 * NV]: a's rows lda apart, b packed [k][16 * NV], c's rows
// ldc apart. NV = 4 is the main kernel; 1 to 3 take a layer's last, narrower panel.
template <int NV>
inline void micro_kernel(const float* a, int64_t lda, const float* b, int64_t k, float* c, int64_t ldc) {
  constexpr int kNr = 16 * NV;
  V16 acc[6][NV];
#pragma GCC unroll 6
  for (int r = 0; r < 6; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) acc[r][q] = _mm512_setzero_ps();
  const float* a0 = a;
  const float* a1 = a + lda;
  const float* a2 = a + 2 * lda;
  const float* a3 = a + 3 * lda;
  const float* a4 = a + 4 * lda;
  const float* a5 = a + 5 * lda;
  for (int64_t i = 0; i < k; ++i) {
    V16 bv[NV];
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) bv[q] = _mm512_loadu_ps(b + i * kNr + q * 16);
    const float* rows[6] = {a0 + i, a1 + i, a2 + i, a3 + i, a4 + i, a5 + i};
#pragma GCC unroll 6
    for (int r = 0; r < 6; ++r) {
      const V16 av = _mm512_set1_ps(*rows[r]);
#pragma GCC unroll 4
      for (int q = 0; q < NV; ++q) acc[r][q] = _mm512_fmadd_ps(av, bv[q], acc[r][q]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < 6; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) _mm512_storeu_ps(c + r * ldc + q * 16, acc[r][q]);
}

}  // namespace

void run_avx512(const RunArgs& a) {
  const auto multiply = [&](const Tiling& d, int64_t tpad, const float* v, float* m) { multiply_panels(d, tpad, v, a.packed, m); };
  if (a.tile == 6)
    run_blocks<float, 6>(a, multiply);
  else
    run_blocks<float, 4>(a, multiply);
}

}  // namespace sd::native::ops::wino
