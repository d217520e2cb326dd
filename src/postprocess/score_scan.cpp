#include "postprocess/score_scan.h"

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

// GCC 12 warns about the deliberately undefined pass-through operand inside its own AVX-512
// intrinsics (_mm512_undefined_ps); a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace sd::scan {

void column_max(const float* data, int64_t row_stride, int rows, int n, float* __restrict best) {
  const float* __restrict first = data;
  for (int j = 0; j < n; ++j) best[j] = first[j];
  // Two rows per pass halves the loads and stores of `best`. max is exact and associative on
  // non-NaN values, so the result equals the row-by-row maximum.
  int r = 1;
  for (; r + 1 < rows; r += 2) {
    const float* __restrict a = data + r * row_stride;
    const float* __restrict b = a + row_stride;
    for (int j = 0; j < n; ++j) {
      float m = a[j] > b[j] ? a[j] : b[j];
      best[j] = m > best[j] ? m : best[j];
    }
  }
  for (; r < rows; ++r) {
    const float* __restrict a = data + r * row_stride;
    for (int j = 0; j < n; ++j) best[j] = a[j] > best[j] ? a[j] : best[j];
  }
}

void column_max_plain(const float* data, int64_t row_stride, int rows, int n, float* best) {
  for (int j = 0; j < n; ++j) {
    float m = data[j];
    for (int r = 1; r < rows; ++r) {
      float v = data[r * row_stride + j];
      if (v > m) m = v;
    }
    best[j] = m;
  }
}

int column_find(const float* data, int64_t row_stride, int rows, float value) {
  for (int r = 0; r < rows; ++r)
    if (data[r * row_stride] == value) return r;
  return -1;
}

int row_argmax(const float* p, int n) {
  float m = row_max(p, n);
  for (int i = 0; i < n; ++i)
    if (p[i] == m) return i;
  return 0;  // only when p holds NaNs that row_max skipped
}

float row_max_plain(const float* p, int n) {
  float m = p[0];
  for (int i = 1; i < n; ++i)
    if (p[i] > m) m = p[i];
  return m;
}

float row_max(const float* p, int n) {
  int i = 0;
  float m = p[0];
#if defined(__AVX512F__)
  if (n >= 16) {
    __m512 acc = _mm512_loadu_ps(p);
    for (i = 16; i + 16 <= n; i += 16) acc = _mm512_max_ps(_mm512_loadu_ps(p + i), acc);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc);
    m = lanes[0];
    for (int k = 1; k < 16; ++k)
      if (lanes[k] > m) m = lanes[k];
  }
#elif defined(__AVX2__)
  if (n >= 8) {
    __m256 acc = _mm256_loadu_ps(p);
    for (i = 8; i + 8 <= n; i += 8) acc = _mm256_max_ps(_mm256_loadu_ps(p + i), acc);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc);
    m = lanes[0];
    for (int k = 1; k < 8; ++k)
      if (lanes[k] > m) m = lanes[k];
  }
#endif
  for (; i < n; ++i)
    if (p[i] > m) m = p[i];
  return m;
}

bool row_any_at_least_plain(const float* p, int n, float threshold) {
  for (int i = 0; i < n; ++i)
    if (p[i] >= threshold) return true;
  return false;
}

bool row_any_at_least(const float* p, int n, float threshold) {
  int i = 0;
#if defined(__AVX512F__)
  const __m512 t = _mm512_set1_ps(threshold);
  for (; i + 16 <= n; i += 16)
    if (_mm512_cmp_ps_mask(_mm512_loadu_ps(p + i), t, _CMP_GE_OQ)) return true;
  if (i < n) {
    __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1u);
    return _mm512_mask_cmp_ps_mask(tail, _mm512_maskz_loadu_ps(tail, p + i), t, _CMP_GE_OQ) != 0;
  }
  return false;
#elif defined(__AVX2__)
  const __m256 t = _mm256_set1_ps(threshold);
  for (; i + 8 <= n; i += 8)
    if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + i), t, _CMP_GE_OQ))) return true;
#endif
  for (; i < n; ++i)
    if (p[i] >= threshold) return true;
  return false;
}

}  // namespace sd::scan
