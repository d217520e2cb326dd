// Whether this CPU runs oneDNN's bf16 convolutions natively (no oneDNN header: the loader asks).
#pragma once

namespace sd::native {

// `isa` is a dnnl_cpu_isa_t value (a mask of ISA bits): true when it includes avx512_core_bf16
// (vdpbf16ps) or AMX. Below that, oneDNN 2.6 emulates bf16 on AVX-512 (slower than float32) or
// has no bf16 convolution at all.
bool cpu_isa_has_bf16(unsigned isa);
// cpu_isa_has_bf16 of oneDNN's effective ISA on this machine.
bool cpu_has_bf16();

}  // namespace sd::native
