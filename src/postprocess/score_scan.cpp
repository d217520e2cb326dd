#include "postprocess/score_scan.h"

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

float row_max_isa(cpu::Isa isa, const float* p, int n) {
#if defined(__x86_64__)
  if (isa >= cpu::Isa::kAvx512) return row_max_avx512(p, n);
  if (isa >= cpu::Isa::kAvx2) return row_max_avx2(p, n);
#endif
  return row_max_plain(p, n);
}

float row_max(const float* p, int n) { return row_max_isa(cpu::active_isa(), p, n); }

bool row_any_at_least_plain(const float* p, int n, float threshold) {
  for (int i = 0; i < n; ++i)
    if (p[i] >= threshold) return true;
  return false;
}

bool row_any_at_least_isa(cpu::Isa isa, const float* p, int n, float threshold) {
#if defined(__x86_64__)
  if (isa >= cpu::Isa::kAvx512) return row_any_at_least_avx512(p, n, threshold);
  if (isa >= cpu::Isa::kAvx2) return row_any_at_least_avx2(p, n, threshold);
#endif
  return row_any_at_least_plain(p, n, threshold);
}

bool row_any_at_least(const float* p, int n, float threshold) { return row_any_at_least_isa(cpu::active_isa(), p, n, threshold); }

}  // namespace sd::scan
