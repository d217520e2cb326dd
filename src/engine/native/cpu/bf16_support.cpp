#include "engine/native/cpu/bf16_support.h"

#include <oneapi/dnnl/dnnl.hpp>

namespace sd::native {

bool cpu_isa_has_bf16(unsigned isa) {
  const unsigned bf16 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);
  return (isa & bf16) == bf16;  // the AMX masks contain avx512_core_bf16's bits
}

bool cpu_has_bf16() { return cpu_isa_has_bf16(static_cast<unsigned>(dnnl::get_effective_cpu_isa())); }

}  // namespace sd::native
