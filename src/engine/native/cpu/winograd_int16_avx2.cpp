// Int16Winograd's kernel for AVX2 (compiled with -march=x86-64-v3; winograd_int16.h): per block of
// tiles, the input transform of the source bytes into int16 V[36][tiles][c], 36 GEMMs V[p] x U'[p]
// with a 6x16 vpmaddwd micro-kernel (12 int32 accumulators, 2 weight vectors, a broadcast pair of
// channels: 15 of the 16 registers) into float32 M[36][tiles][oc], and the float32 output
// transform of the float Winograd (winograd_avx2_common.inc).
#define STREAMDET_ISA_VARIANT avx2
#include <immintrin.h>

#include <algorithm>

#include "engine/native/cpu/epilogue_avx2.h"
#include "engine/native/cpu/sigmoid_avx2.h"
#include "engine/native/cpu/thread_floats.h"
#include "engine/native/cpu/winograd_conv.h"
#include "engine/native/cpu/winograd_int16.h"
#include "engine/native/parallel.h"

namespace sd::native::ops::wino {
namespace {

#include "engine/native/cpu/winograd_avx2_common.inc"

using I16 = __m256i;

#include "engine/native/cpu/int16_gemm_avx2.inc"

// B^T z for one column (or row) of 6, in int16: input_rows<4>'s arithmetic with shifts for the
// factors 2, 4 and 5. No intermediate passes 25500 in magnitude (winograd_int16.h).
inline void input_rows16(const I16* z, I16* r) {
  const auto x2 = [](I16 x) { return _mm256_add_epi16(x, x); };
  const auto x4 = [](I16 x) { return _mm256_slli_epi16(x, 2); };
  const auto x5 = [](I16 x) { return _mm256_add_epi16(_mm256_slli_epi16(x, 2), x); };
  const I16 z42 = _mm256_sub_epi16(z[4], z[2]);
  r[0] = _mm256_add_epi16(_mm256_sub_epi16(x4(z[0]), x5(z[2])), z[4]);
  r[1] = _mm256_sub_epi16(_mm256_add_epi16(z[3], z[4]), x4(_mm256_add_epi16(z[1], z[2])));
  r[2] = _mm256_add_epi16(x4(_mm256_sub_epi16(z[1], z[2])), _mm256_sub_epi16(z[4], z[3]));
  r[3] = _mm256_add_epi16(x2(_mm256_sub_epi16(z[3], z[1])), z42);
  r[4] = _mm256_add_epi16(x2(_mm256_sub_epi16(z[1], z[3])), z42);
  r[5] = _mm256_add_epi16(_mm256_sub_epi16(x4(z[1]), x5(z[3])), z[5]);
}

// Tiles [t0, t0 + count) into V[36][tpad][c] (int16).
template <bool kSigned>
void input_transform16(const wino16::Args& a, const Tiling& d, int64_t t0, int64_t count, int64_t tpad, int16_t* v) {
  constexpr int kA = 6;
  const int64_t C = d.c;
  const I16 zp = _mm256_set1_epi16(static_cast<int16_t>(a.x_zero)), zero = _mm256_setzero_si256();
  for (int64_t tl = 0; tl < count; ++tl) {
    const int64_t t = t0 + tl, img = t / (d.th * d.tw), r = t % (d.th * d.tw), iy0 = r / d.tw * 4 - 1, ix0 = r % d.tw * 4 - 1;
    const uint8_t* base = a.src + img * d.h * d.w * C;
    const bool inside = iy0 >= 0 && ix0 >= 0 && iy0 + kA <= d.h && ix0 + kA <= d.w;
    bool row_in[kA], col_in[kA];
    for (int i = 0; i < kA; ++i) {
      row_in[i] = inside || (iy0 + i >= 0 && iy0 + i < d.h);
      col_in[i] = inside || (ix0 + i >= 0 && ix0 + i < d.w);
    }
    int16_t* vt = v + tl * C;
    for (int64_t c = 0; c < C; c += 16) {
      I16 tmp[kA][kA];  // [row of B^T d][column]
      for (int j = 0; j < kA; ++j) {
        I16 z[kA], rr[kA];
        for (int i = 0; i < kA; ++i) z[i] = row_in[i] && col_in[j] ? load_source16<kSigned>(base + ((iy0 + i) * d.w + ix0 + j) * C + c, zp) : zero;
        input_rows16(z, rr);
        for (int i = 0; i < kA; ++i) tmp[i][j] = rr[i];
      }
      for (int i = 0; i < kA; ++i) {
        I16 rr[kA];
        input_rows16(tmp[i], rr);
        for (int j = 0; j < kA; ++j) _mm256_storeu_si256(reinterpret_cast<I16*>(vt + (i * kA + j) * tpad * C + c), rr[j]);
      }
    }
  }
}

// M[p] = (V[p] x U'[p]) * scale[p] for the 36 positions, the block's `count` tiles only.
void multiply16(const wino16::Args& a, const Tiling& d, int64_t tpad, int64_t count, const int16_t* v, float* m) {
  const int64_t C = d.c, OC = d.oc;
  for (int64_t p = 0; p < 36; ++p) {
    const int16_t* vp = v + p * tpad * C;
    float* mp = m + p * tpad * OC;
    for (int64_t o0 = 0; o0 < OC; o0 += 16) {
      const int16_t* panel = a.packed + (p * OC + o0) * C;  // [p][o0 / 16][c / 2][16][2]
      for (int64_t t = 0; t < count; t += 6)
        (a.avx_vnni ? micro_rows16<true> : micro_rows16<false>)(std::min<int64_t>(6, count - t), vp + t * C, C, panel, C, a.chunk,
                                                                 mp + t * OC + o0, OC, a.scale + p * OC + o0);
    }
  }
}

// The output transform into bytes: each tile's outputs into `stage` (4 x 4 x oc floats, in L1),
// then each of its rows (cols pixels of oc channels, contiguous in NHWC) quantized into dst_q.
void output_quantized(const wino16::Args& a, const RunArgs& out, const Tiling& d, int64_t t0, int64_t count, int64_t tpad, const float* m,
                      float* stage) {
  const int64_t OC = d.oc;
  for (int64_t tl = 0; tl < count; ++tl) {
    const int64_t t = t0 + tl, img = t / (d.th * d.tw), r = t % (d.th * d.tw), oy0 = r / d.tw * 4, ox0 = r % d.tw * 4;
    const int64_t rows = std::min<int64_t>(4, d.h - oy0), cols = std::min<int64_t>(4, d.w - ox0);
    output_tile<4>(out, m + tl * OC, tpad, OC, rows, cols,
                   [&](int64_t i, int64_t j, int64_t o, V8 x) { _mm256_storeu_ps(stage + (i * 4 + j) * OC + o, x); });
    for (int64_t i = 0; i < rows; ++i)
      a.out.quantize(stage + i * 4 * OC, cols * OC, *a.out.y_q, a.out.table, a.out.dst_q + ((img * d.h + oy0 + i) * d.w + ox0) * OC);
  }
}

template <bool kSigned>
void run_blocks16(const wino16::Args& a) {
  Tiling d{a.n, a.h, a.w, a.c, a.oc, (a.h + 3) / 4, (a.w + 3) / 4, 0, 36};
  d.tiles = a.n * d.th * d.tw;
  // The float output transform's arguments: the bias, no post ops, dense float32 output.
  RunArgs out{};
  out.g = WinogradGeometry{a.n, a.c, a.h, a.w, a.oc};
  out.bias = a.bias;
  out.dst = a.out.dst;
  out.dst_stride = a.oc;
  const int64_t tpad = block_tiles_for(d, a.threads, 6, static_cast<int64_t>(sizeof(int16_t)));
  const int64_t v_floats = 36 * tpad * a.c / 2;  // int16 V in floats (c is even)
  parallel_for(d.tiles, a.threads, 1, [&](int64_t begin, int64_t end) {
    float* buf = thread_buffer(static_cast<size_t>(v_floats + 36 * tpad * a.oc + 16 * a.oc));
    auto* v = reinterpret_cast<int16_t*>(buf);
    float* m = buf + v_floats;
    float* stage = m + 36 * tpad * a.oc;
    for (int64_t t0 = begin; t0 < end; t0 += tpad) {
      const int64_t count = std::min(tpad, end - t0);
      input_transform16<kSigned>(a, d, t0, count, tpad, v);
      multiply16(a, d, tpad, count, v, m);
      if (a.out.dst_q)
        output_quantized(a, out, d, t0, count, tpad, m, stage);
      else
        output_transform<4>(out, d, t0, count, tpad, m);
    }
  });
}

}  // namespace
}  // namespace sd::native::ops::wino

namespace sd::native::ops::wino16 {

void run_avx2(const Args& a) {
  if (a.x_signed)
    wino::run_blocks16<true>(a);
  else
    wino::run_blocks16<false>(a);
}

}  // namespace sd::native::ops::wino16
