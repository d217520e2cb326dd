// Int8Table's and Int8AddTables' lookups on AVX2 (byte_table_kernel.h), compiled with the AVX2
// flags (CMakeLists.txt). Without them the AVX2 path ran the scalar loops: on YOLOv8n's QDQ model
// (`--cpu-isa avx2`) the tables took 3.3 ms a run against 1.2 on AVX-512 (docs/benchmarks.md,
// "int8 tables on the AVX2 path").
// - Bytes to bytes: 32 at a time (then 16: rows of 16 channels), the 256-entry table by shuffles
//   (byte_table_rows_avx2.h).
// - Bytes to floats (a table, or the sum of two or three tables' entries, quantized as
//   QuantizeLinear does or not): 8 at a time, gathers from the 1 KiB float tables (in L1).
// - The quantized sum of two as one 64 KiB pair table: 8 at a time, a gather of 4 bytes at each
//   pair's index, its low byte the entry.
// Each is the scalar loop's bytes (the same sums in the same order, the same division and
// rounding); what is left past the last full vector goes through the scalar loop.
#include <immintrin.h>

#include "engine/native/cpu/byte_table_kernel.h"
#include "engine/native/cpu/byte_table_rows_avx2.h"

namespace sd::native::ops::byte_table {
namespace {

inline __m256i indices8(const uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }

// 8 table entries a + 8 b (+ 8 c after, the order of the graph's two Adds).
inline __m256 sum8(const uint8_t* a, const uint8_t* b, const float* ta, const float* tb) {
  return _mm256_add_ps(_mm256_i32gather_ps(ta, indices8(a), 4), _mm256_i32gather_ps(tb, indices8(b), 4));
}
inline __m256 sum8_3(const uint8_t* a, const uint8_t* b, const uint8_t* c, const float* ta, const float* tb, const float* tc) {
  return _mm256_add_ps(sum8(a, b, ta, tb), _mm256_i32gather_ps(tc, indices8(c), 4));
}

// 8 int32s in [-128, 255] (clamped before) as 8 bytes: signed saturation where the range is int8's,
// unsigned where it is uint8's (exact either way: every value is in range).
inline void store_bytes8(__m256i v, bool signed_bytes, uint8_t* y) {
  const __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
  const __m128i w = signed_bytes ? _mm_packs_epi32(lo, hi) : _mm_packus_epi32(lo, hi);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(y), signed_bytes ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w));
}

// As the scalar loop: divide, round half to even, add the zero point, clamp (the sums of finite
// table entries are never NaN), convert.
inline void store_quantized8(__m256 x, const AddTables& q, uint8_t* y) {
  __m256 r = _mm256_add_ps(_mm256_round_ps(_mm256_div_ps(x, _mm256_set1_ps(q.s)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                           _mm256_set1_ps(q.zf));
  r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(q.lo)), _mm256_set1_ps(q.hi));
  store_bytes8(_mm256_cvtps_epi32(r), q.lo < 0.f, y);
}

}  // namespace

void lookup_avx2(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) { Rows(table).lookup(x, y, n, table); }

void lookup_rows_avx2(const uint8_t* x, int64_t x_stride, uint8_t* y, int64_t y_stride, int64_t rows, int64_t c, const uint8_t* table) {
  const Rows t(table);
  for (int64_t r = 0; r < rows; ++r, x += x_stride, y += y_stride) t.lookup(x, y, c, table);
}

void lookup_float_avx2(const uint8_t* x, float* y, int64_t n, const float* table) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_i32gather_ps(table, indices8(x + i), 4));
  lookup_float_baseline(x + i, y + i, n - i, table);
}

void add_float_avx2(const uint8_t* a, const uint8_t* b, int64_t n, const float* ta, const float* tb, float* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, sum8(a + i, b + i, ta, tb));
  add_float_baseline(a + i, b + i, n - i, ta, tb, y + i);
}

void add_bytes_avx2(const uint8_t* a, const uint8_t* b, int64_t n, const float* ta, const float* tb, const AddTables& q, uint8_t* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store_quantized8(sum8(a + i, b + i, ta, tb), q, y + i);
  add_bytes_baseline(a + i, b + i, n - i, ta, tb, q, y + i);
}

void add3_float_avx2(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const float* ta, const float* tb, const float* tc,
                     float* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, sum8_3(a + i, b + i, c + i, ta, tb, tc));
  add3_float_baseline(a + i, b + i, c + i, n - i, ta, tb, tc, y + i);
}

void add3_bytes_avx2(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const float* ta, const float* tb, const float* tc,
                     const AddTables& q, uint8_t* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store_quantized8(sum8_3(a + i, b + i, c + i, ta, tb, tc), q, y + i);
  add3_bytes_baseline(a + i, b + i, c + i, n - i, ta, tb, tc, q, y + i);
}

void add_pairs_avx2(const uint8_t* a, const uint8_t* b, int64_t n, const uint8_t* pairs, uint8_t* y) {
  const auto* base = reinterpret_cast<const int*>(pairs);
  const __m256i low8 = _mm256_set1_epi32(0xFF);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    // 4 bytes at each pair's index, the low one its entry.
    const __m256i at = _mm256_or_si256(_mm256_slli_epi32(indices8(a + i), 8), indices8(b + i));
    store_bytes8(_mm256_and_si256(_mm256_i32gather_epi32(base, at, 1), low8), false, y + i);
  }
  add_pairs_baseline(a + i, b + i, n - i, pairs, y + i);
}

}  // namespace sd::native::ops::byte_table
