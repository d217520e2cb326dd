// Int8Table's byte lookup, AVX-512 (byte_table_kernel.h); compiled with the AVX-512 flags
// (CMakeLists.txt), VBMI's part with its own target attribute, taken where CPUID has it.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/native/cpu/byte_table_kernel.h"

namespace sd::native::ops::byte_table {

namespace {
__attribute__((target("avx512vbmi"))) inline __m512i vbmi_lookup(__m512i v, __m512i t0, __m512i t1, __m512i t2, __m512i t3) {
  const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);  // entries 0..127 by the low 7 bits
  const __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);  // 128..255
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi);
}
}  // namespace

__attribute__((target("avx512vbmi"))) void lookup_avx512_vbmi(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(y + i, vbmi_lookup(_mm512_loadu_si512(x + i), t0, t1, t2, t3));
  if (i < n) {
    const __mmask64 m = _cvtu64_mask64((~0ULL) >> (64 - (n - i)));
    _mm512_mask_storeu_epi8(y + i, m, vbmi_lookup(_mm512_maskz_loadu_epi8(m, x + i), t0, t1, t2, t3));
  }
}

void lookup_avx512_bw(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) {
  __m512i rows[16];
  for (int r = 0; r < 16; ++r) rows[r] = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * r)));
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  auto one = [&](__m512i v) {
    const __m512i lo = _mm512_and_si512(v, low4);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    __m512i r = _mm512_setzero_si512();
    for (int k = 0; k < 16; ++k) r = _mm512_mask_shuffle_epi8(r, _mm512_cmpeq_epi8_mask(hi, _mm512_set1_epi8(static_cast<char>(k))), rows[k], lo);
    return r;
  };
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(y + i, one(_mm512_loadu_si512(x + i)));
  if (i < n) {
    const __mmask64 m = _cvtu64_mask64((~0ULL) >> (64 - (n - i)));
    _mm512_mask_storeu_epi8(y + i, m, one(_mm512_maskz_loadu_epi8(m, x + i)));
  }
}

namespace {
// 16 table entries a + 16 b, by the bytes at a and b (m: which of the 16 lanes are loaded).
inline __m512 sum16(const uint8_t* a, const uint8_t* b, __mmask16 m, const float* ta, const float* tb) {
  const __m512i ia = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, a)), ib = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, b));
  return _mm512_add_ps(_mm512_i32gather_ps(ia, ta, 4), _mm512_i32gather_ps(ib, tb, 4));
}
}  // namespace

void add_float_avx512(const uint8_t* a, const uint8_t* b, int64_t n, const float* ta, const float* tb, float* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, sum16(a + i, b + i, m, ta, tb));
  }
}

namespace {
// As the scalar loop: divide, round half to even, add the zero point, clamp (the sums of finite
// table entries are never NaN), convert; the int32s narrowed to their low bytes.
inline void store_quantized16(__m512 x, const AddTables& q, __mmask16 m, uint8_t* y) {
  __m512 r = _mm512_add_ps(_mm512_roundscale_ps(_mm512_div_ps(x, _mm512_set1_ps(q.s)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                           _mm512_set1_ps(q.zf));
  r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(q.lo)), _mm512_set1_ps(q.hi));
  _mm_mask_storeu_epi8(y, m, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(r)));
}
// sum16 plus 16 entries of tc by the bytes at c, added after (the order of the graph's two Adds).
inline __m512 sum16_3(const uint8_t* a, const uint8_t* b, const uint8_t* c, __mmask16 m, const float* ta, const float* tb, const float* tc) {
  const __m512i ic = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, c));
  return _mm512_add_ps(sum16(a, b, m, ta, tb), _mm512_i32gather_ps(ic, tc, 4));
}
}  // namespace

void add_bytes_avx512(const uint8_t* a, const uint8_t* b, int64_t n, const float* ta, const float* tb, const AddTables& q, uint8_t* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - i)) - 1);
    store_quantized16(sum16(a + i, b + i, m, ta, tb), q, m, y + i);
  }
}

void add3_float_avx512(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const float* ta, const float* tb,
                       const float* tc, float* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, sum16_3(a + i, b + i, c + i, m, ta, tb, tc));
  }
}

void add3_bytes_avx512(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const float* ta, const float* tb,
                       const float* tc, const AddTables& q, uint8_t* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - i)) - 1);
    store_quantized16(sum16_3(a + i, b + i, c + i, m, ta, tb, tc), q, m, y + i);
  }
}

void lookup_float_avx512(const uint8_t* x, float* y, int64_t n, const float* table) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512i ix = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, x + i));
    _mm512_mask_storeu_ps(y + i, m, _mm512_i32gather_ps(ix, table, 4));
  }
}

void add_pairs_avx512(const uint8_t* a, const uint8_t* b, int64_t n, const uint8_t* pairs, uint8_t* y) {
  const auto* base = reinterpret_cast<const int*>(pairs);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512i ia = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, a + i)), ib = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, b + i));
    // 4 bytes at each pair's index, the low one its entry.
    const __m512i v = _mm512_i32gather_epi32(_mm512_or_si512(_mm512_slli_epi32(ia, 8), ib), base, 1);
    _mm_mask_storeu_epi8(y + i, m, _mm512_cvtepi32_epi8(v));
  }
}

namespace {
// The 64 entries of a table (as byte planes) at the indices v, as four vectors of 16 floats in
// the order the byte interleaving leaves them: f[j]'s lane L holds the entries of indices
// 16 L + 4 j .. 16 L + 4 j + 3 (hi: v's high bits, which half of each plane).
__attribute__((target("avx512vbmi"))) inline void entries64(__m512i v, __mmask64 hi, const BytePlanes& t, __m512 f[4]) {
  __m512i p[4];
  for (int k = 0; k < 4; ++k) {
    const uint8_t* pl = t.plane[k];
    const __m512i lo = _mm512_permutex2var_epi8(_mm512_load_si512(pl), v, _mm512_load_si512(pl + 64));
    p[k] = _mm512_mask_blend_epi8(hi, lo, _mm512_permutex2var_epi8(_mm512_load_si512(pl + 128), v, _mm512_load_si512(pl + 192)));
  }
  const __m512i lo01 = _mm512_unpacklo_epi8(p[0], p[1]), hi01 = _mm512_unpackhi_epi8(p[0], p[1]);
  const __m512i lo23 = _mm512_unpacklo_epi8(p[2], p[3]), hi23 = _mm512_unpackhi_epi8(p[2], p[3]);
  f[0] = _mm512_castsi512_ps(_mm512_unpacklo_epi16(lo01, lo23));
  f[1] = _mm512_castsi512_ps(_mm512_unpackhi_epi16(lo01, lo23));
  f[2] = _mm512_castsi512_ps(_mm512_unpacklo_epi16(hi01, hi23));
  f[3] = _mm512_castsi512_ps(_mm512_unpackhi_epi16(hi01, hi23));
}
}  // namespace

namespace {
// The quantized sums of 64 elements, by their input bytes (vc unused where !three), in order.
__attribute__((target("avx512vbmi"))) inline __m512i sums64(__m512i va, __m512i vb, __m512i vc, bool three, const BytePlanes& ta,
                                                            const BytePlanes& tb, const BytePlanes& tc, const AddTables& q) {
  __m512 fa[4], fb[4], fc[4];
  entries64(va, _mm512_movepi8_mask(va), ta, fa);
  entries64(vb, _mm512_movepi8_mask(vb), tb, fb);
  if (three) entries64(vc, _mm512_movepi8_mask(vc), tc, fc);
  __m128i r[4];
  for (int j = 0; j < 4; ++j) {
    __m512 x = _mm512_add_ps(fa[j], fb[j]);
    if (three) x = _mm512_add_ps(x, fc[j]);
    // As the scalar loop: divide, round half to even, add the zero point, clamp (sums of finite
    // entries are never NaN), convert; the int32s narrowed to their low bytes.
    x = _mm512_add_ps(_mm512_roundscale_ps(_mm512_div_ps(x, _mm512_set1_ps(q.s)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                      _mm512_set1_ps(q.zf));
    r[j] = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(q.lo)), _mm512_set1_ps(q.hi))));
  }
  __m512i out = _mm512_castsi128_si512(r[0]);
  out = _mm512_inserti32x4(out, r[1], 1);
  out = _mm512_inserti32x4(out, r[2], 2);
  out = _mm512_inserti32x4(out, r[3], 3);
  // Byte 16 j + 4 L + k of `out` is element 16 L + 4 j + k: a 4x4 transpose of dwords.
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), out);
}

// Up to four pieces of at most 16 bytes (those masked off load nothing) in one vector's lanes.
struct Pieces {
  const uint8_t* at[4];
  __mmask16 m[4];
};
// Rows narrower than a vector (YOLOv8's C2f at 16 or 32 channels) as their 16-byte pieces, four to
// a vector: piece `piece` of `total` is row piece / per_row, from byte piece % per_row * 16.
struct RowPieces {
  int64_t cols, per_row, total;
  RowPieces(int64_t rows, int64_t c) : cols(c), per_row((c + 15) / 16), total(rows * per_row) {}
  // Piece p's row and offset, and its mask (none past the last piece, which stands in for it).
  void at(int64_t p, int64_t& row, int64_t& offset, __mmask16& m) const {
    const int64_t q = std::min(p, total - 1);
    row = q / per_row, offset = q % per_row * 16;
    m = p < total ? static_cast<__mmask16>((1u << std::min<int64_t>(16, cols - offset)) - 1) : 0;
  }
};
inline __m512i load_pieces(const Pieces& p) {
  __m512i v = _mm512_castsi128_si512(_mm_maskz_loadu_epi8(p.m[0], p.at[0]));
  v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(p.m[1], p.at[1]), 1);
  v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(p.m[2], p.at[2]), 2);
  return _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(p.m[3], p.at[3]), 3);
}
inline void store_pieces(__m512i v, uint8_t* const at[4], const __mmask16 m[4]) {
  _mm_mask_storeu_epi8(at[0], m[0], _mm512_castsi512_si128(v));
  _mm_mask_storeu_epi8(at[1], m[1], _mm512_extracti32x4_epi32(v, 1));
  _mm_mask_storeu_epi8(at[2], m[2], _mm512_extracti32x4_epi32(v, 2));
  _mm_mask_storeu_epi8(at[3], m[3], _mm512_extracti32x4_epi32(v, 3));
}
}  // namespace

__attribute__((target("avx512vbmi"))) void add_planes_avx512_vbmi(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n,
                                                                  const BytePlanes& ta, const BytePlanes& tb, const BytePlanes& tc,
                                                                  const AddTables& q, uint8_t* y) {
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i va = _mm512_loadu_si512(a + i), vb = _mm512_loadu_si512(b + i);
    const __m512i vc = c ? _mm512_loadu_si512(c + i) : va;
    _mm512_storeu_si512(y + i, sums64(va, vb, vc, c != nullptr, ta, tb, tc, q));
  }
  if (i == n) return;
  // The tail through 64-byte buffers, not 64-bit masks: clang 14 (the fuzz build's) failed to
  // compile this function with masked loads and stores under its sanitizers ("Cannot emit physreg
  // copy instruction").
  alignas(64) uint8_t xa[64] = {}, xb[64] = {}, xc[64] = {}, xy[64];
  const size_t rest = static_cast<size_t>(n - i);
  std::memcpy(xa, a + i, rest);
  std::memcpy(xb, b + i, rest);
  if (c) std::memcpy(xc, c + i, rest);
  _mm512_store_si512(xy, sums64(_mm512_load_si512(xa), _mm512_load_si512(xb), _mm512_load_si512(xc), c != nullptr, ta, tb, tc, q));
  std::memcpy(y + i, xy, rest);
}

__attribute__((target("avx512vbmi"))) void add_planes_rows_avx512_vbmi(const uint8_t* const in[3], const int64_t in_stride[3], int64_t rows,
                                                                       int64_t cols, const BytePlanes& ta, const BytePlanes& tb,
                                                                       const BytePlanes& tc, const AddTables& q, uint8_t* y, int64_t y_stride) {
  const bool three = in[2] != nullptr;
  if (cols >= 64) {  // each row mostly whole vectors
    for (int64_t r = 0; r < rows; ++r)
      add_planes_avx512_vbmi(in[0] + r * in_stride[0], in[1] + r * in_stride[1], three ? in[2] + r * in_stride[2] : nullptr, cols, ta, tb,
                             tc, q, y + r * y_stride);
    return;
  }
  const RowPieces pieces(rows, cols);
  for (int64_t p = 0; p < pieces.total; p += 4) {
    Pieces pa{}, pb{}, pc{};
    uint8_t* py[4];
    for (int k = 0; k < 4; ++k) {
      int64_t r, o;
      __mmask16 m;
      pieces.at(p + k, r, o, m);
      pa.at[k] = in[0] + r * in_stride[0] + o, pb.at[k] = in[1] + r * in_stride[1] + o;
      pc.at[k] = three ? in[2] + r * in_stride[2] + o : pa.at[k];
      py[k] = y + r * y_stride + o;
      pa.m[k] = pb.m[k] = pc.m[k] = m;
    }
    const __m512i va = load_pieces(pa), vb = load_pieces(pb), vc = three ? load_pieces(pc) : va;
    store_pieces(sums64(va, vb, vc, three, ta, tb, tc, q), py, pa.m);
  }
}

bool has_vbmi() {
  static const bool vbmi = __builtin_cpu_supports("avx512vbmi");
  return vbmi;
}

void lookup_avx512(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) {
  if (has_vbmi()) lookup_avx512_vbmi(x, y, n, table);
  else lookup_avx512_bw(x, y, n, table);
}

namespace {
// Rows of c bytes from x (rows x_stride bytes apart) into y (y_stride apart); `one` looks up 64 bytes.
template <class One>
inline void lookup_rows_with(const uint8_t* x, int64_t x_stride, uint8_t* y, int64_t y_stride, int64_t rows, int64_t c, One one) {
  const __mmask64 tail = c % 64 ? _cvtu64_mask64((~0ULL) >> (64 - c % 64)) : 0;
  const int64_t full = c - c % 64;
  for (int64_t r = 0; r < rows; ++r, x += x_stride, y += y_stride) {
    for (int64_t i = 0; i < full; i += 64) _mm512_storeu_si512(y + i, one(_mm512_loadu_si512(x + i)));
    if (tail) _mm512_mask_storeu_epi8(y + full, tail, one(_mm512_maskz_loadu_epi8(tail, x + full)));
  }
}

}  // namespace

__attribute__((target("avx512vbmi"))) void lookup_rows_avx512_vbmi(const uint8_t* x, int64_t x_stride, uint8_t* y, int64_t y_stride,
                                                                   int64_t rows, int64_t c, const uint8_t* table) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  // Written out (no lambda): a lambda here would not carry the function's VBMI target.
  const __mmask64 tail = c % 64 ? _cvtu64_mask64((~0ULL) >> (64 - c % 64)) : 0;
  const int64_t full = c - c % 64;
  for (int64_t r = 0; r < rows; ++r, x += x_stride, y += y_stride) {
    for (int64_t i = 0; i < full; i += 64) _mm512_storeu_si512(y + i, vbmi_lookup(_mm512_loadu_si512(x + i), t0, t1, t2, t3));
    if (tail) _mm512_mask_storeu_epi8(y + full, tail, vbmi_lookup(_mm512_maskz_loadu_epi8(tail, x + full), t0, t1, t2, t3));
  }
}

void lookup_rows_avx512_bw(const uint8_t* x, int64_t x_stride, uint8_t* y, int64_t y_stride, int64_t rows, int64_t c, const uint8_t* table) {
  __m512i tr[16];
  for (int r = 0; r < 16; ++r) tr[r] = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * r)));
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  lookup_rows_with(x, x_stride, y, y_stride, rows, c, [&](__m512i v) {
    const __m512i lo = _mm512_and_si512(v, low4);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    __m512i r = _mm512_setzero_si512();
    for (int k = 0; k < 16; ++k) r = _mm512_mask_shuffle_epi8(r, _mm512_cmpeq_epi8_mask(hi, _mm512_set1_epi8(static_cast<char>(k))), tr[k], lo);
    return r;
  });
}

void lookup_rows_avx512(const uint8_t* x, int64_t x_stride, uint8_t* y, int64_t y_stride, int64_t rows, int64_t c, const uint8_t* table) {
  if (has_vbmi()) lookup_rows_avx512_vbmi(x, x_stride, y, y_stride, rows, c, table);
  else lookup_rows_avx512_bw(x, x_stride, y, y_stride, rows, c, table);
}

}  // namespace sd::native::ops::byte_table
