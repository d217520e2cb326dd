// Int16Pointwise's kernel for AVX2 (compiled with -march=x86-64-v3; pointwise_int16.h): the output
// pixels in blocks, each block's rows of source taps widened to int16 minus the zero point (a 1x1
// layer's rows as they are), the GEMM by the int16 micro-kernel (6 pixels x 16 output channels),
// the bias, and each pixel's outputs written float32 or quantized.
#define STREAMDET_ISA_VARIANT avx2
#include <immintrin.h>

#include <algorithm>

#include "engine/native/cpu/pointwise_int16.h"
#include "engine/native/cpu/thread_floats.h"
#include "engine/native/parallel.h"

namespace sd::native::ops::pw16 {
namespace {

using I16 = __m256i;

#include "engine/native/cpu/int16_gemm_avx2.inc"

// Output pixels a block: its int16 source rows (48 x kh x kw x c: 48 x 576 for a 3x3 layer of 64
// channels, 54 KiB) and float outputs (48 x oc) stay in L1/L2 while the packed weights stream
// through once a block; 24 where the rows are longer.
inline int64_t block_pixels(int64_t k) { return k <= 1152 ? 48 : 24; }

// Output pixel p's row of taps (kh x kw x c int16, tap by tap; zeros outside the picture).
template <bool kSigned>
inline void gather_row(const Args& a, int64_t p, I16 zp, int16_t* row) {
  const ConvGeometry& g = a.g;
  const int64_t img = p / (g.oh * g.ow), r = p % (g.oh * g.ow), oy = r / g.ow, ox = r % g.ow;
  for (int64_t ky = 0; ky < g.kh; ++ky)
    for (int64_t kx = 0; kx < g.kw; ++kx, row += g.c) {
      const int64_t iy = oy * g.sh - g.pt + ky * g.dh, ix = ox * g.sw - g.pl + kx * g.dw;
      if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) {
        std::fill(row, row + g.c, int16_t{0});  // padding: the zero point, 0 after the subtraction
        continue;
      }
      const uint8_t* s = a.src + ((img * g.h + iy) * g.w + ix) * g.c;
      for (int64_t c = 0; c < g.c; c += 16) _mm256_storeu_si256(reinterpret_cast<I16*>(row + c), load_source16<kSigned>(s + c, zp));
    }
}

template <bool kSigned>
void run_blocks(const Args& a) {
  const ConvGeometry& g = a.g;
  const int64_t C = g.c, OC = g.oc, K = g.kh * g.kw * C, pixels = g.n * g.oh * g.ow, block = block_pixels(K);
  const bool rows_as_they_are = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0;
  parallel_for(pixels, a.threads, block, [&](int64_t begin, int64_t end) {
    float* buf = thread_floats(static_cast<size_t>(block * K / 2 + block * OC));
    auto* x = reinterpret_cast<int16_t*>(buf);
    float* y = buf + block * K / 2;
    const I16 zp = _mm256_set1_epi16(static_cast<int16_t>(a.x_zero));
    for (int64_t p0 = begin; p0 < end; p0 += block) {
      const int64_t count = std::min(block, end - p0);
      if (rows_as_they_are) {
        const uint8_t* s = a.src + p0 * C;
        for (int64_t i = 0; i < count * C; i += 16) _mm256_storeu_si256(reinterpret_cast<I16*>(x + i), load_source16<kSigned>(s + i, zp));
      } else {
        for (int64_t px = 0; px < count; ++px) gather_row<kSigned>(a, p0 + px, zp, x + px * K);
      }
      for (int64_t o0 = 0; o0 < OC; o0 += 16)
        for (int64_t t = 0; t < count; t += 6)
          (a.avx_vnni ? micro_rows16<true> : micro_rows16<false>)(std::min<int64_t>(6, count - t), x + t * K, K, a.packed + o0 * K, K, K,
                                                                 y + t * OC + o0, OC, a.scale + o0);
      // The bias, then the block's pixels (consecutive in NHWC) written or quantized in one pass.
      for (int64_t px = 0; px < count; ++px) {
        float* row = y + px * OC;
        for (int64_t o = 0; o < OC; o += 8) _mm256_storeu_ps(row + o, _mm256_add_ps(_mm256_loadu_ps(row + o), _mm256_loadu_ps(a.bias + o)));
      }
      if (a.out.dst_q)
        a.out.quantize(y, count * OC, *a.out.y_q, a.out.table, a.out.dst_q + p0 * OC);
      else
        std::copy(y, y + count * OC, a.out.dst + p0 * OC);
    }
  });
}

}  // namespace

void run_avx2(const Args& a) {
  if (a.x_signed)
    run_blocks<true>(a);
  else
    run_blocks<false>(a);
}

}  // namespace sd::native::ops::pw16
