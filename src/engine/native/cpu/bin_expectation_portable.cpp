// BinExpectation's row loop for the baseline, and the dispatch.
#define STREAMDET_ISA_VARIANT baseline
#define STREAMDET_BIN_ROW_FN row_baseline
#define STREAMDET_BIN_VECTOR f32x4
#include "engine/native/cpu/bin_expectation_row.inc"

namespace sd::native::ops::bin_expectation {

RowFn row_kernel(cpu::Isa isa) {
#if defined(__x86_64__)
  if (isa >= cpu::Isa::kAvx512) return row_avx512;
  if (isa >= cpu::Isa::kAvx2) return row_avx2;
#endif
  return row_baseline;
}

}  // namespace sd::native::ops::bin_expectation
