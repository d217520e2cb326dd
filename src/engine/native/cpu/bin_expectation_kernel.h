// BinExpectation's (DFL's) inner loop over one row of anchors, one variant per instruction set:
// the same source (bin_expectation_row.inc) compiled for the baseline, AVX2 and AVX-512 (its
// vectors of anchors are one register: 16, 8 or 4 floats).
#pragma once

#include <cstdint>

#include "core/cpu_isa.h"

namespace sd::native::ops::bin_expectation {

// yr[i] = bias + sum_b w[b] * softmax_b(xr[b * sk + i]) for i in [0, a): K = k bins, sk apart.
using RowFn = void (*)(const float* xr, float* yr, int64_t a, int64_t k, int64_t sk, const float* w, float bias);

void row_baseline(const float* xr, float* yr, int64_t a, int64_t k, int64_t sk, const float* w, float bias);
#if defined(__x86_64__)
void row_avx2(const float* xr, float* yr, int64_t a, int64_t k, int64_t sk, const float* w, float bias);
void row_avx512(const float* xr, float* yr, int64_t a, int64_t k, int64_t sk, const float* w, float bias);
#endif

// The variant for `isa` (the highest at or below it).
RowFn row_kernel(cpu::Isa isa);

}  // namespace sd::native::ops::bin_expectation
