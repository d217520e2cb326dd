// PointwiseConv's kernel for AVX2 + FMA (compiled with -march=x86-64-v3; pointwise_conv.h): per
// block of pixels and panel of 16 output channels (the last 8), a 6x16 FMA micro-kernel (12
// accumulators, 2 weight vectors, a broadcast: 15 of the 16 registers) whose accumulators start
// at the bias and end in the epilogue, stored once where the strides say.
#define STREAMDET_ISA_VARIANT avx2
#include <immintrin.h>

#include <algorithm>

#include "engine/native/cpu/epilogue_avx2.h"
#include "engine/native/cpu/pointwise_conv.h"
#include "engine/native/cpu/sigmoid_avx2.h"
#include "engine/native/parallel.h"

namespace sd::native::ops::pointwise {
namespace {

// dst[p0 + r][o0 + 8 q] for r < R, q < NV: src rows p0.. (a.src_stride apart) x the panel
// b[c][8 * NV], plus the bias, then the epilogue.
template <int NV, int R>
inline void micro_kernel(const RunArgs& a, int64_t p0, int64_t o0, const float* b, bool silu_only) {
  constexpr int kNr = 8 * NV;
  const int64_t k = a.g.c;
  __m256 acc[R][NV];
#pragma GCC unroll 2
  for (int q = 0; q < NV; ++q) {
    const __m256 bias = _mm256_loadu_ps(a.bias + o0 + q * 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) acc[r][q] = bias;
  }
  const float* ar[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) ar[r] = a.src + (p0 + r) * a.src_stride;
  for (int64_t i = 0; i < k; ++i) {
    __m256 bv[NV];
#pragma GCC unroll 2
    for (int q = 0; q < NV; ++q) bv[q] = _mm256_loadu_ps(b + i * kNr + q * 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(ar[r] + i);
#pragma GCC unroll 2
      for (int q = 0; q < NV; ++q) acc[r][q] = _mm256_fmadd_ps(av, bv[q], acc[r][q]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    float* y = a.dst + (p0 + r) * a.dst_stride + o0;
#pragma GCC unroll 2
    for (int q = 0; q < NV; ++q) {
      const __m256 x = silu_only ? avx2_math::silu(acc[r][q])
                                 : avx2_epilogue::apply(a.posts, a.post_count, acc[r][q], a.sum, (p0 + r) * a.sum_stride + o0 + q * 8);
      _mm256_storeu_ps(y + q * 8, x);
    }
  }
}

template <int NV>
inline void micro_rows(int64_t rows, const RunArgs& a, int64_t p0, int64_t o0, const float* b, bool silu_only) {
  switch (rows) {
    case 6: micro_kernel<NV, 6>(a, p0, o0, b, silu_only); break;
    case 5: micro_kernel<NV, 5>(a, p0, o0, b, silu_only); break;
    case 4: micro_kernel<NV, 4>(a, p0, o0, b, silu_only); break;
    case 3: micro_kernel<NV, 3>(a, p0, o0, b, silu_only); break;
    case 2: micro_kernel<NV, 2>(a, p0, o0, b, silu_only); break;
    default: micro_kernel<NV, 1>(a, p0, o0, b, silu_only); break;
  }
}

}  // namespace

void run_avx2(const RunArgs& a) {
  const int64_t P = a.g.pixels, C = a.g.c, OC = a.g.oc, block = PointwiseConv::kBlockPixels;
  // SiLU alone, YOLOv8's every 1x1 but the head's last: without the epilogue's loop and switch.
  const bool silu_only = a.post_count == 1 && a.posts[0].kind == WinoPostKind::kSilu;
  const int64_t blocks = (P + block - 1) / block;
  parallel_for(blocks, a.threads, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t s = blk * block, e = std::min(P, s + block);
      for (int64_t o0 = 0, nr = 0; o0 < OC; o0 += nr) {
        nr = wino::panel_width(false, OC, o0);
        const float* panel = a.packed + o0 * C;
        for (int64_t p = s; p < e; p += 6) {
          const int64_t rows = std::min<int64_t>(6, e - p);
          if (nr == 16)
            micro_rows<2>(rows, a, p, o0, panel, silu_only);
          else
            micro_rows<1>(rows, a, p, o0, panel, silu_only);
        }
      }
    }
  });
}

}  // namespace sd::native::ops::pointwise
