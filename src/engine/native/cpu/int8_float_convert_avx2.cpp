// int8_float_convert.h's AVX2 variants (compiled with the AVX2 flags, CMakeLists.txt): 8 values a
// vector (32 when quantizing); a fused table looked up by shuffles.
#include <immintrin.h>

#include "engine/native/cpu/int8_float_convert.h"

#include "engine/native/cpu/byte_table_rows_avx2.h"

namespace sd::native::ops::int8_float {

void dequantize_avx2(const uint8_t* x, int64_t n, const Quantization& q, float* y) {
  const __m256i z = _mm256_set1_epi32(q.zero_point);
  const __m256 s = _mm256_set1_ps(q.scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i));
    const __m256i v = q.is_signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, z)), s));
  }
  dequantize_baseline(x + i, n - i, q, y + i);
}

namespace {

// 32 values at a time; with a table (Rows: byte_table_rows_avx2.h) its bytes looked up by
// shuffles after the vector quantization. The table's 32-bit entries gathered per value
// (vpgatherdd) cost 4x the quantization itself (docs/benchmarks.md, "The quantization after each
// int16 layer").
struct NoTable {
  __m256i lookup(__m256i v) const { return v; }
};

template <class Table>
void quantize_rows(const float* x, int64_t n, const Quantization& q, const Table& t, const uint8_t* table, uint8_t* y) {
  const __m256 s = _mm256_set1_ps(q.scale), zf = _mm256_set1_ps(static_cast<float>(q.zero_point));
  const __m256 lo = _mm256_set1_ps(q.is_signed ? -128.f : 0.f), hi = _mm256_set1_ps(q.is_signed ? 127.f : 255.f);
  const __m256i low_byte = _mm256_set1_epi32(0xFF);
  // 8 values -> their bytes (0..255) in 32-bit lanes.
  auto bytes8 = [&](const float* p) {
    __m256 r = _mm256_add_ps(_mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(p), s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zf);
    r = _mm256_andnot_ps(_mm256_cmp_ps(r, r, _CMP_UNORD_Q), r);  // NaN -> 0
    r = _mm256_min_ps(_mm256_max_ps(r, lo), hi);
    return _mm256_and_si256(_mm256_cvtps_epi32(r), low_byte);
  };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i a = _mm256_packus_epi32(bytes8(x + i), bytes8(x + i + 8));  // 16-bit, lanes interleaved
    const __m256i b = _mm256_packus_epi32(bytes8(x + i + 16), bytes8(x + i + 24));
    const __m256i c = _mm256_packus_epi16(a, b);  // bytes in the order 0-3 8-11 16-19 24-27 4-7 12-15 20-23 28-31 (groups of 4)
    const __m256i v = _mm256_permutevar8x32_epi32(c, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), t.lookup(v));
  }
  quantize_baseline(x + i, n - i, q, table, y + i);
}

}  // namespace

void quantize_avx2(const float* x, int64_t n, const Quantization& q, const uint8_t* table, uint8_t* y) {
  if (table)
    quantize_rows(x, n, q, byte_table::Rows(table), table, y);
  else
    quantize_rows(x, n, q, NoTable{}, table, y);
}

}  // namespace sd::native::ops::int8_float
