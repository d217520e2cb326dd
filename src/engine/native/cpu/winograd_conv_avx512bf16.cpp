// WinogradConv's bf16 variant (compiled with -march=x86-64-v4 -mavx512bf16; winograd_conv.h), for
// --precision bf16 on processors with AVX512_BF16: the AVX-512 variant's steps with the 36 GEMMs
// in bf16. Per block of six tiles, the input transform in float32, rounded to bf16 as it is stored
// into V[36][6][c]; 36 GEMMs V[p] x U[p] into float32 M[36][6][oc] with a 6x64 vdpbf16ps
// micro-kernel (24 accumulators; each instruction multiplies a pair of channels for 16 output
// channels and adds both products, so twice the multiply-adds of an FMA and half the bytes of
// input and weights to read); then the float32 output transform with the epilogue, as the AVX-512
// variant (winograd_avx512_common.inc).
//
// Why: oneDNN 2.6's bf16 convolution is a direct one, at about this processor's bf16 peak; on
// YOLOv8n's 3x3 layers it was slower than our float32 Winograd (docs/benchmarks.md), which does
// a quarter of the multiplications. Winograd with a bf16 GEMM does both.
#define STREAMDET_ISA_VARIANT avx512bf16
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

// c[R][16 * NV] = a[R][k] x b[k][16 * NV] in bf16 with float32 sums: a's rows lda apart (bf16,
// channels in order), b packed [k / 2][16 * NV][2] (each output channel's pair of consecutive
// channels side by side), c's rows ldc apart (float32). k even. NV = 4 is the main kernel; 1 to 3
// take a layer's last, narrower panel. R = 6 but for a block's last rows (multiply_panels).
template <int NV, int R>
inline void micro_kernel(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t k, float* c, int64_t ldc) {
  V16 acc[R][NV];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) acc[r][q] = _mm512_setzero_ps();
  const uint16_t* ar[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) ar[r] = a + r * lda;
  accumulate_bf16_pairs<NV, R>(ar, b, k, acc);
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) _mm512_storeu_ps(c + r * ldc + q * 16, acc[r][q]);
}

}  // namespace

void run_avx512bf16(const RunArgs& a) {
  const auto multiply = [&](const Tiling& d, int64_t tpad, int64_t count, const uint16_t* v, float* m) {
    multiply_panels(d, tpad, count, v, a.packed_bf16, m);
  };
  run_tiles<uint16_t>(a, multiply);
}

}  // namespace sd::native::ops::wino
