// Int16Winograd's kernel for AVX2 (compiled with -march=x86-64-v3; winograd_int16.h): per block of
// tiles, the input transform of the source bytes into int16 V[36][tiles][c], 36 GEMMs V[p] x U'[p]
// with a 6x16 vpmaddwd micro-kernel (12 int32 accumulators, 2 weight vectors, a broadcast pair of
// channels: 15 of the 16 registers) into float32 M[36][tiles][oc], and the float32 output
// transform of the float Winograd (winograd_avx2_common.inc).
#define STREAMDET_ISA_VARIANT avx2
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "engine/native/cpu/epilogue_avx2.h"
#include "engine/native/cpu/sigmoid_avx2.h"
#include "engine/native/cpu/winograd_conv.h"
#include "engine/native/cpu/winograd_int16.h"
#include "engine/native/parallel.h"

namespace sd::native::ops::wino {
namespace {

#include "engine/native/cpu/winograd_avx2_common.inc"

using I16 = __m256i;

// 16 source bytes (16 channels of a pixel) as int16, minus the zero point.
template <bool kSigned>
inline I16 load_source16(const uint8_t* p, I16 zero_point) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_sub_epi16(kSigned ? _mm256_cvtepi8_epi16(b) : _mm256_cvtepu8_epi16(b), zero_point);
}

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

// out[R][16] (+)= (a[R][k] x b[k][16]) * scale[16] for the channels [k0, k1): a's rows lda apart
// (int16, channel pairs read as one int32), b packed [k / 2][16][2], out's rows ldo apart. The
// sums are exact in int32 (Int16Winograd::chunk_channels bounds the chunk); `first` stores, else
// adds in float32.
// The accumulators are named variables and each row's step one asm statement: 12 accumulators, 2
// weight vectors, the broadcast pair and a product are the 16 registers. Written in intrinsics,
// GCC loads every row's pair first and keeps accumulators on the stack, storing them back every
// iteration (half the kernel's time, measured).
#define SD_I16_ROW(r, a0, a1)                                                                                    \
  if constexpr (R > r) {                                                                                         \
    I16 av, t;                                                                                                   \
    asm("vpbroadcastd %[p], %[av]\n\t"                                                                           \
        "vpmaddwd %[b0], %[av], %[t]\n\t"                                                                        \
        "vpaddd %[t], %[x0], %[x0]\n\t"                                                                          \
        "vpmaddwd %[b1], %[av], %[t]\n\t"                                                                        \
        "vpaddd %[t], %[x1], %[x1]"                                                                               \
        : [x0] "+x"(a0), [x1] "+x"(a1), [av] "=&x"(av), [t] "=&x"(t)                                               \
        : [p] "m"(*reinterpret_cast<const int32_t*>(a + r * lda + i)), [b0] "x"(b0), [b1] "x"(b1));               \
  }
#define SD_I16_STORE(r, a0, a1)                                                                   \
  if constexpr (R > r) {                                                                          \
    float* o = out + r * ldo;                                                                     \
    const __m256 f0 = _mm256_cvtepi32_ps(a0), f1 = _mm256_cvtepi32_ps(a1);                        \
    _mm256_storeu_ps(o, first ? _mm256_mul_ps(f0, s0) : _mm256_fmadd_ps(f0, s0, _mm256_loadu_ps(o)));         \
    _mm256_storeu_ps(o + 8, first ? _mm256_mul_ps(f1, s1) : _mm256_fmadd_ps(f1, s1, _mm256_loadu_ps(o + 8))); \
  }
// STEP(row, its two accumulators) for the six rows.
#define SD_I16_EACH_ROW(STEP) STEP(0, c00, c01) STEP(1, c10, c11) STEP(2, c20, c21) STEP(3, c30, c31) STEP(4, c40, c41) STEP(5, c50, c51)
template <int R>
inline void micro_chunk16(const int16_t* a, int64_t lda, const int16_t* b, int64_t k0, int64_t k1, bool first, float* out, int64_t ldo,
                          const float* scale) {
  I16 c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  I16 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t i = k0; i < k1; i += 2) {
    const I16 b0 = _mm256_loadu_si256(reinterpret_cast<const I16*>(b + i * 16));
    const I16 b1 = _mm256_loadu_si256(reinterpret_cast<const I16*>(b + i * 16 + 16));
    SD_I16_EACH_ROW(SD_I16_ROW)
  }
  const __m256 s0 = _mm256_loadu_ps(scale), s1 = _mm256_loadu_ps(scale + 8);
  SD_I16_EACH_ROW(SD_I16_STORE)
}
#undef SD_I16_EACH_ROW
#undef SD_I16_ROW
#undef SD_I16_STORE

// The channels in chunks of `chunk` (each one's int32 sums exact), the first stored, the rest added.
template <int R>
inline void micro_kernel16(const int16_t* a, int64_t lda, const int16_t* b, int64_t k, int64_t chunk, float* out, int64_t ldo,
                           const float* scale) {
  for (int64_t k0 = 0; k0 < k; k0 += chunk) micro_chunk16<R>(a, lda, b, k0, std::min(k, k0 + chunk), k0 == 0, out, ldo, scale);
}

inline void micro_rows16(int64_t rows, const int16_t* a, int64_t lda, const int16_t* b, int64_t k, int64_t chunk, float* out, int64_t ldo,
                         const float* scale) {
  switch (rows) {
    case 6: micro_kernel16<6>(a, lda, b, k, chunk, out, ldo, scale); break;
    case 5: micro_kernel16<5>(a, lda, b, k, chunk, out, ldo, scale); break;
    case 4: micro_kernel16<4>(a, lda, b, k, chunk, out, ldo, scale); break;
    case 3: micro_kernel16<3>(a, lda, b, k, chunk, out, ldo, scale); break;
    case 2: micro_kernel16<2>(a, lda, b, k, chunk, out, ldo, scale); break;
    default: micro_kernel16<1>(a, lda, b, k, chunk, out, ldo, scale); break;
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
        micro_rows16(std::min<int64_t>(6, count - t), vp + t * C, C, panel, C, a.chunk, mp + t * OC + o0, OC, a.scale + p * OC + o0);
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
      a.quantize(stage + i * 4 * OC, cols * OC, *a.y_q, a.table, a.dst_q + ((img * d.h + oy0 + i) * d.w + ox0) * OC);
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
  out.dst = a.dst;
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
      if (a.dst_q)
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
