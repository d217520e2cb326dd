// PointwiseConv's bf16 variant (compiled with -march=x86-64-v4 -mavx512bf16; pointwise_conv.h),
// for --precision bf16 on processors with AVX512_BF16, on a bf16 source tensor: per block of
// pixels and panel of up to 64 output channels, a 6x64 vdpbf16ps micro-kernel (24 float32
// accumulators starting at the bias; each instruction multiplies a pair of channels for 16 output
// channels and adds both products), then the float32 epilogue, stored once as float32 or rounded
// to bf16.
#define STREAMDET_ISA_VARIANT avx512bf16
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/native/cpu/bf16_round_avx512.h"
#include "engine/native/cpu/epilogue_avx512.h"
#include "engine/native/cpu/pointwise_conv.h"
#include "engine/native/cpu/sigmoid_avx512.h"
#include "engine/native/parallel.h"

namespace sd::native::ops::pointwise {
namespace {

// Two bf16 values (a channel pair) as one 32-bit lane, for a broadcast.
inline int32_t pair_at(const uint16_t* p) {
  int32_t x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

template <int NV, int R>
inline void micro_kernel(const RunArgs& a, int64_t p0, int64_t o0, const uint16_t* b, bool silu_only) {
  constexpr int kNr = 16 * NV;
  const int64_t k = a.g.c;
  __m512 acc[R][NV];
#pragma GCC unroll 4
  for (int q = 0; q < NV; ++q) {
    const __m512 bias = _mm512_loadu_ps(a.bias + o0 + q * 16);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) acc[r][q] = bias;
  }
  const uint16_t* ar[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) ar[r] = a.src_bf16 + (p0 + r) * a.src_stride;
  for (int64_t i = 0; i < k; i += 2) {
    __m512bh bv[NV];
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) bv[q] = (__m512bh)_mm512_loadu_si512(b + i * kNr + q * 32);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(pair_at(ar[r] + i));
#pragma GCC unroll 4
      for (int q = 0; q < NV; ++q) acc[r][q] = _mm512_dpbf16_ps(acc[r][q], av, bv[q]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) {
      const __m512 x = silu_only ? avx512_math::silu(acc[r][q])
                                 : avx512_epilogue::apply(a.posts, a.post_count, acc[r][q], a.sum, (p0 + r) * a.sum_stride + o0 + q * 16);
      if (a.dst_bf16)
        store_bf16_avx512(a.dst_bf16 + (p0 + r) * a.dst_stride + o0 + q * 16, x);
      else
        _mm512_storeu_ps(a.dst + (p0 + r) * a.dst_stride + o0 + q * 16, x);
    }
  }
}

template <int NV>
inline void micro_rows(int64_t rows, const RunArgs& a, int64_t p0, int64_t o0, const uint16_t* b, bool silu_only) {
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

void run_avx512bf16(const RunArgs& a) {
  const int64_t P = a.g.pixels, C = a.g.c, OC = a.g.oc, block = PointwiseConv::kBlockPixels;
  const bool silu_only = a.post_count == 1 && a.posts[0].kind == WinoPostKind::kSilu;
  const int64_t blocks = (P + block - 1) / block;
  parallel_for(blocks, a.threads, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t s = blk * block, e = std::min(P, s + block);
      for (int64_t o0 = 0, nr = 0; o0 < OC; o0 += nr) {
        nr = wino::panel_width(true, OC, o0);
        const uint16_t* panel = a.packed_bf16 + o0 * C;
        for (int64_t p = s; p < e; p += 6) {
          const int64_t rows = std::min<int64_t>(6, e - p);
          switch (nr) {
            case 64: micro_rows<4>(rows, a, p, o0, panel, silu_only); break;
            case 48: micro_rows<3>(rows, a, p, o0, panel, silu_only); break;
            case 32: micro_rows<2>(rows, a, p, o0, panel, silu_only); break;
            default: micro_rows<1>(rows, a, p, o0, panel, silu_only); break;
          }
        }
      }
    }
  });
}

}  // namespace sd::native::ops::pointwise
