// row_max and row_any_at_least with AVX2 (compiled with -march=x86-64-v3): see score_scan.h.
#include <immintrin.h>

#include "postprocess/score_scan.h"

namespace sd::scan {

float row_max_avx2(const float* p, int n) {
  int i = 0;
  float m = p[0];
  if (n >= 8) {
    __m256 acc = _mm256_loadu_ps(p);
    for (i = 8; i + 8 <= n; i += 8) acc = _mm256_max_ps(_mm256_loadu_ps(p + i), acc);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc);
    m = lanes[0];
    for (int k = 1; k < 8; ++k)
      if (lanes[k] > m) m = lanes[k];
  }
  for (; i < n; ++i)
    if (p[i] > m) m = p[i];
  return m;
}

bool row_any_at_least_avx2(const float* p, int n, float threshold) {
  int i = 0;
  const __m256 t = _mm256_set1_ps(threshold);
  for (; i + 8 <= n; i += 8)
    if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + i), t, _CMP_GE_OQ))) return true;
  for (; i < n; ++i)
    if (p[i] >= threshold) return true;
  return false;
}

}  // namespace sd::scan
