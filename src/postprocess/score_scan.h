// The inner loops of the decoders: finding the best class score of each anchor.
//
// Channel-major heads ([C, A]: one row per class, one column per anchor) are scanned row by row
// with a running maximum over a block of anchors, which the compiler turns into packed max
// instructions over contiguous memory. Anchor-major heads ([A, C]: one row per anchor) use
// row_max / row_any_at_least, with AVX-512 / AVX2 variants (score_scan_avx512.cpp,
// score_scan_avx2.cpp, chosen at run time by sd::cpu::active_isa()) and the scalar path; all
// return exactly the same values (max is exact). The *_plain functions are the naive versions the
// tests compare against.
#pragma once

#include <cstdint>

#include "core/cpu_isa.h"

namespace sd::scan {

// best[j] = max over r in [0, rows) of data[r * row_stride + j], for j in [0, n).
void column_max(const float* data, int64_t row_stride, int rows, int n, float* best);
void column_max_plain(const float* data, int64_t row_stride, int rows, int n, float* best);

// The lowest r in [0, rows) with data[r * row_stride] == value, -1 if none.
int column_find(const float* data, int64_t row_stride, int rows, float value);

// Index of the largest of p[0..n) (the first one on ties), n >= 1.
int row_argmax(const float* p, int n);

// max of p[0..n), n >= 1.
float row_max(const float* p, int n);
float row_max_plain(const float* p, int n);

// True when some p[i] >= threshold, i in [0, n).
bool row_any_at_least(const float* p, int n, float threshold);
bool row_any_at_least_plain(const float* p, int n, float threshold);

// The variant for `isa` (the highest at or below it; the processor must run it), for the tests.
float row_max_isa(cpu::Isa isa, const float* p, int n);
bool row_any_at_least_isa(cpu::Isa isa, const float* p, int n, float threshold);

#if defined(__x86_64__)
float row_max_avx2(const float* p, int n);
bool row_any_at_least_avx2(const float* p, int n, float threshold);
float row_max_avx512(const float* p, int n);
bool row_any_at_least_avx512(const float* p, int n, float threshold);
#endif

}  // namespace sd::scan
