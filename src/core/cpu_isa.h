// Which x86 instruction set our own CPU kernels run (the stem convolution, SiLU/sigmoid, the
// decoders' score scans): detected once by CPUID, chosen at run time, so that one binary built for
// the x86-64-v2 baseline runs AVX2 or AVX-512 code where the processor has it.
//
// Each kernel with ISA variants keeps them in files of their own, *_avx2.cpp and *_avx512.cpp,
// compiled with that ISA's flags (CMakeLists.txt) and called only when active_isa() allows; the
// portable variant is compiled for the baseline and runs everywhere (aarch64 included).
//
// The level can be capped for the whole process (the `--cpu-isa` option, tests): to measure or
// test the AVX2 path on an AVX-512 machine. The cap also goes to oneDNN (dnnl_set_max_cpu_isa),
// which honours it only before its first primitive is created.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sd::cpu {

// Ordered: each level includes the ones before it, but for kAvx2Vnni's AVX-VNNI, which the first
// AVX-512 processors (Skylake-SP) lack; our kernels have no variant of their own for it (it runs
// the AVX2 ones), it matters to oneDNN's int8 convolutions only (exact with VNNI).
enum class Isa {
  kBaseline,    // x86-64-v2 (SSE4.2) on x86, the compiler's default elsewhere: the portable kernels
  kAvx2,        // AVX2 + FMA (x86-64-v3)
  kAvx2Vnni,    // the above with AVX-VNNI (VEX vpdpbusd: Intel's client processors since Alder Lake)
  kAvx512,      // AVX-512 F, BW, DQ, VL (x86-64-v4)
  kAvx512Vnni,  // the above with VNNI (int8 dot products); our float kernels run their AVX-512 variant
  kAvx512Bf16,  // the above with AVX512_BF16 (vdpbf16ps): the bf16 Winograd kernel (--precision bf16)
};

// What this processor (and its operating system) can run, by CPUID; computed once.
Isa detected_isa();

// Whether it has AVX-VNNI (the VEX-encoded vpdpbusd / vpdpwssd on 256 bits), whatever its level:
// AVX-512 processors with VNNI may lack it (Ice Lake, Cascade Lake), Alder Lake's have it.
bool has_avx_vnni();

// Whether our kernels may use it: the processor has it and active_isa() is kAvx2Vnni or above.
bool avx_vnni_active();

// min(detected_isa(), the cap): the level our kernels dispatch on.
Isa active_isa();

// Caps active_isa() at `isa` for the rest of the process (a cap above what the processor runs is
// no cap), and asks oneDNN for the same cap. Returns false when oneDNN refused it (it has already
// created a primitive, or its own environment variable is set): our kernels are capped anyway.
bool cap_isa(Isa isa);

// Every level this processor runs, lowest first (kBaseline always): the variants tests can call.
std::vector<Isa> runnable_isas();

// "sse4.2", "avx2", "avx2_vnni", "avx512", "avx512_vnni", "avx512_bf16" ("portable" for kBaseline on other processors).
const char* isa_name(Isa isa);

// The inverse of isa_name (also "baseline" and "portable" for kBaseline); nullopt if unknown.
std::optional<Isa> parse_isa(std::string_view name);

// The instruction set oneDNN's kernels use here, by its own name ("avx512_core_vnni", "avx2"...).
std::string onednn_isa_name();

// What the files without ISA variants were compiled for: "sse4.2" (the default build), or more
// with -DSTREAMDET_NATIVE=ON (then the binary needs that processor whatever --cpu-isa says).
const char* build_baseline();

// One line for --version and bench: "kernels avx512_vnni, oneDNN avx512_core_vnni".
std::string isa_summary();

}  // namespace sd::cpu
