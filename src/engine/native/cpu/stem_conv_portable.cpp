// The stem kernel for the baseline (x86-64-v2, or any other processor), and the dispatch.
#define STREAMDET_ISA_VARIANT baseline
#define STREAMDET_VECTOR_BYTES 16
#define STREAMDET_STEM_ROW_FN row_baseline
#include "engine/native/cpu/stem_conv_rows.inc"

namespace sd::native::ops::stem {

RowFn row_kernel(cpu::Isa isa) {
#if defined(__x86_64__)
  if (isa >= cpu::Isa::kAvx512) return row_avx512;
  if (isa >= cpu::Isa::kAvx2) return row_avx2;
#endif
  return row_baseline;
}

}  // namespace sd::native::ops::stem
