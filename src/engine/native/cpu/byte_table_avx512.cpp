// Int8Table's byte lookup, AVX-512 (byte_table_kernel.h); compiled with the AVX-512 flags
// (CMakeLists.txt), VBMI's part with its own target attribute, taken where CPUID has it.
#include <immintrin.h>

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
