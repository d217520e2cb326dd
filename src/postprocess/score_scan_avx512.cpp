// row_max and row_any_at_least with AVX-512 (compiled with -march=x86-64-v4): see score_scan.h.
#include <immintrin.h>

#include "postprocess/score_scan.h"

// GCC 12 warns about the deliberately undefined pass-through operand inside its own AVX-512
// intrinsics (_mm512_undefined_ps); a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace sd::scan {

float row_max_avx512(const float* p, int n) {
  int i = 0;
  float m = p[0];
  if (n >= 16) {
    __m512 acc = _mm512_loadu_ps(p);
    for (i = 16; i + 16 <= n; i += 16) acc = _mm512_max_ps(_mm512_loadu_ps(p + i), acc);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc);
    m = lanes[0];
    for (int k = 1; k < 16; ++k)
      if (lanes[k] > m) m = lanes[k];
  }
  for (; i < n; ++i)
    if (p[i] > m) m = p[i];
  return m;
}

bool row_any_at_least_avx512(const float* p, int n, float threshold) {
  int i = 0;
  const __m512 t = _mm512_set1_ps(threshold);
  for (; i + 16 <= n; i += 16)
    if (_mm512_cmp_ps_mask(_mm512_loadu_ps(p + i), t, _CMP_GE_OQ)) return true;
  if (i < n) {
    __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1u);
    return _mm512_mask_cmp_ps_mask(tail, _mm512_maskz_loadu_ps(tail, p + i), t, _CMP_GE_OQ) != 0;
  }
  return false;
}

}  // namespace sd::scan
