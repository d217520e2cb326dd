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
#include "engine/native/cpu/epilogue_avx512.h"
#include "engine/native/cpu/sigmoid_avx512.h"
#include "engine/native/cpu/thread_floats.h"
#include "engine/native/cpu/winograd_conv.h"
#include "engine/native/parallel.h"

namespace sd::native::ops::wino {
namespace {

#include "engine/native/cpu/winograd_avx512_common.inc"

// c[R][16 * NV] = a[R][k] x b[k][16 * NV]: a's rows lda apart, b packed [k][16 * NV], c's rows
// ldc apart. NV = 4 is the main kernel; 1 to 3 take a layer's last, narrower panel. R = 6 but for
// a block's last rows (multiply_panels).
template <int NV, int R>
inline void micro_kernel(const float* a, int64_t lda, const float* b, int64_t k, float* c, int64_t ldc) {
  constexpr int kNr = 16 * NV;
  V16 acc[R][NV];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) acc[r][q] = _mm512_setzero_ps();
  const float* ar[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) ar[r] = a + r * lda;
  for (int64_t i = 0; i < k; ++i) {
    V16 bv[NV];
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) bv[q] = _mm512_loadu_ps(b + i * kNr + q * 16);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const V16 av = _mm512_set1_ps(ar[r][i]);
#pragma GCC unroll 4
      for (int q = 0; q < NV; ++q) acc[r][q] = _mm512_fmadd_ps(av, bv[q], acc[r][q]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) _mm512_storeu_ps(c + r * ldc + q * 16, acc[r][q]);
}

}  // namespace

void run_avx512(const RunArgs& a) {
  const auto multiply = [&](const Tiling& d, int64_t tpad, int64_t count, const float* v, float* m) {
    multiply_panels(d, tpad, count, v, a.packed, m);
  };
  run_tiles<float>(a, multiply);
}

}  // namespace sd::native::ops::wino
