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

template <int NV, int R>
inline void micro_kernel(const RunArgs& a, int64_t p0, int64_t o0, const uint16_t* b, bool silu_only) {
  __m512 acc[R][NV];
#pragma GCC unroll 4
  for (int q = 0; q < NV; ++q) {
    const __m512 bias = _mm512_loadu_ps(a.bias + o0 + q * 16);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) acc[r][q] = bias;
  }
  // The source part by part (one part: the whole source): each part's channel pairs, the weights'
  // rows in order.
  for (int part = 0; part < a.part_count; ++part) {
    const SrcPart& sp = a.parts[part];
    const uint16_t* ar[R];
    part_rows<R>(sp, sp.src_bf16, p0, ar);
    accumulate_bf16_pairs<NV, R>(ar, b, sp.c, acc);
    b += sp.c * 16 * NV;
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

#include "engine/native/cpu/pointwise_conv_blocks.inc"

}  // namespace

void run_avx512bf16(const RunArgs& a) { run_blocks<16>(a, a.packed_bf16); }

}  // namespace sd::native::ops::pointwise
