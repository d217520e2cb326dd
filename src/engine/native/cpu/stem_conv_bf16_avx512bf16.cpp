// StemConvBf16's row kernel (compiled with -march=x86-64-v4 -mavx512bf16; stem_conv_bf16.h says
// what it computes and why): per output row, the input rows it reads converted to bf16, then 12
// output columns at a time, 16 output channels a float32 accumulator, two vdpbf16ps per column and
// kernel row.
#include <immintrin.h>

#include <cstring>

#include "engine/native/cpu/bf16_convert.h"
#include "engine/native/cpu/bf16_round_avx512.h"
#include "engine/native/cpu/epilogue_avx512.h"
#include "engine/native/cpu/sigmoid_avx512.h"
#include "engine/native/cpu/stem_conv_bf16.h"

namespace sd::native::ops::stem_bf16 {
namespace {

// Output columns a block: 12 accumulators (as the float32 stem), each fed two products per
// instruction.
constexpr int kColumns = 12;

// Input row `src` (w floats) as bf16 at dst[1 ..], dst[0] and everything after it up to row_len zero.
void convert_row(const float* src, int64_t w, uint16_t* dst, int64_t row_len) {
  dst[0] = 0;
  int64_t x = 0;
  for (; x + 32 <= w; x += 32) {
    const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + x + 16), _mm512_loadu_ps(src + x));
    _mm512_storeu_si512(dst + 1 + x, (__m512i)v);
  }
  for (; x < w; ++x) dst[1 + x] = float_to_bf16_rne(src[x]);  // the instruction's rounding
  std::memset(dst + 1 + w, 0, static_cast<size_t>(row_len - 1 - w) * sizeof(uint16_t));
}

// Output columns ox .. ox + P - 1 of one block of 16 channels. rows[t]: kernel row t's converted
// input row; w: its two weight vectors.
template <int P>
inline void block(const RowArgs& a, const uint16_t* const* rows, const uint16_t* const* w, int n_taps, __m512 bias, int64_t ox,
                  float* dst, uint16_t* dst_bf16, __mmask16 lanes, bool silu_only) {
  __m512 acc[P];
#pragma GCC unroll 12
  for (int p = 0; p < P; ++p) acc[p] = bias;
  for (int t = 0; t < n_taps; ++t) {
    // Word j of a converted row holds input columns 2j - 1 and 2j.
    const uint16_t* row = rows[t] + 2 * ox;
    const __m512bh w01 = (__m512bh)_mm512_loadu_si512(w[t]), w2 = (__m512bh)_mm512_loadu_si512(w[t] + 32);
    __m512bh here = (__m512bh)_mm512_set1_epi32(bf16_pair_at(row));
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p) {
      const __m512bh next = (__m512bh)_mm512_set1_epi32(bf16_pair_at(row + 2 * (p + 1)));
      acc[p] = _mm512_dpbf16_ps(acc[p], here, w01);
      acc[p] = _mm512_dpbf16_ps(acc[p], next, w2);
      here = next;
    }
  }
  const int64_t oc = a.g.oc;
#pragma GCC unroll 12
  for (int p = 0; p < P; ++p) {
    const __m512 x = silu_only ? avx512_math::silu(acc[p]) : avx512_epilogue::apply(a.posts, a.post_count, acc[p], nullptr, 0);
    if (dst_bf16)
      _mm256_mask_storeu_epi16(dst_bf16 + p * oc, lanes, round_to_bf16_avx512(x));
    else
      _mm512_mask_storeu_ps(dst + p * oc, lanes, x);
  }
}

}  // namespace

void row_avx512bf16(const RowArgs& a, int64_t r, uint16_t* rows) {
  const StemConvGeometry& g = a.g;
  const int64_t n = r / g.oh, oy = r % g.oh, row_taps = g.c * 3;
  const uint16_t* tap_rows[12];
  int64_t tap_index[12];  // input channel * 3 + kernel row, for the weights
  int n_taps = 0;
  for (int64_t ic = 0; ic < g.c; ++ic)
    for (int64_t ky = 0; ky < 3; ++ky) {
      const int64_t iy = oy * 2 - g.pt + ky;
      if (iy < 0 || iy >= g.h) continue;  // zero padding: no products
      uint16_t* dst = rows + n_taps * a.row_len;
      convert_row(a.src + ((n * g.c + ic) * g.h + iy) * g.w, g.w, dst, a.row_len);
      tap_rows[n_taps] = dst;
      tap_index[n_taps++] = ic * 3 + ky;
    }
  const bool silu_only = a.post_count == 1 && a.posts[0].kind == WinoPostKind::kSilu;
  for (int64_t ob = 0; ob < (g.oc + 15) / 16; ++ob) {
    const int64_t left = g.oc - ob * 16;  // channels in this block: 16 but in the last
    const __mmask16 lanes = left >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << left) - 1);
    const uint16_t* w[12];
    for (int t = 0; t < n_taps; ++t) w[t] = a.packed + (ob * row_taps + tap_index[t]) * 64;
    const __m512 bias = _mm512_loadu_ps(a.bias + ob * 16);
    const int64_t at = r * g.ow * g.oc + ob * 16;  // column 0 of this row and block
    float* dst = a.dst ? a.dst + at : nullptr;
    uint16_t* dst_bf16 = a.dst_bf16 ? a.dst_bf16 + at : nullptr;
    auto columns = [&](int64_t ox) { return std::pair{dst ? dst + ox * g.oc : nullptr, dst_bf16 ? dst_bf16 + ox * g.oc : nullptr}; };
    int64_t ox = 0;
    for (; ox + kColumns <= g.ow; ox += kColumns) {
      const auto [d, b] = columns(ox);
      block<kColumns>(a, tap_rows, w, n_taps, bias, ox, d, b, lanes, silu_only);
    }
    if (ox < g.ow && g.ow >= kColumns) {
      // The last columns short of a block: one more block ending at the row's end, over columns
      // already written (the same arithmetic, so the same bits).
      const auto [d, b] = columns(g.ow - kColumns);
      block<kColumns>(a, tap_rows, w, n_taps, bias, g.ow - kColumns, d, b, lanes, silu_only);
      ox = g.ow;
    }
    for (; ox < g.ow; ++ox) {
      const auto [d, b] = columns(ox);
      block<1>(a, tap_rows, w, n_taps, bias, ox, d, b, lanes, silu_only);
    }
  }
}

}  // namespace sd::native::ops::stem_bf16
