// Int8Table's byte lookup, the baseline variant and the dispatch (byte_table_kernel.h).
#include "engine/native/cpu/byte_table_kernel.h"

namespace sd::native::ops::byte_table {

void lookup_baseline(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

LookupFn lookup_kernel(cpu::Isa isa) {
#if defined(__x86_64__)
  if (isa >= cpu::Isa::kAvx512) return lookup_avx512;
#else
  (void)isa;
#endif
  return lookup_baseline;
}

}  // namespace sd::native::ops::byte_table
