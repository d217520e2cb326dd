#include "core/cpu_isa.h"

#include <atomic>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <oneapi/dnnl/dnnl.h>

namespace sd::cpu {
namespace {

#if defined(__x86_64__) || defined(__i386__)
constexpr bool kX86 = true;
// AVX-VNNI: CPUID leaf 7 sub-leaf 1, EAX bit 4 (GCC 12's __builtin_cpu_supports("avxvnni")
// answers false on a processor that has it, clang 14's does not know the name).
bool avx_vnni() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && ((a >> 4) & 1U) != 0;
}
Isa detect() {
  // __builtin_cpu_supports checks CPUID and, for AVX and AVX-512, that the OS saves the registers.
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const bool vnni = avx512 && __builtin_cpu_supports("avx512vnni");
  if (vnni && __builtin_cpu_supports("avx512bf16")) return Isa::kAvx512Bf16;
  if (vnni) return Isa::kAvx512Vnni;
  if (avx512) return Isa::kAvx512;
  if (avx2 && avx_vnni()) return Isa::kAvx2Vnni;  // the OS saving the YMM registers: checked for AVX2
  if (avx2) return Isa::kAvx2;
  return Isa::kBaseline;
}
#else
constexpr bool kX86 = false;
Isa detect() { return Isa::kBaseline; }
#endif

std::atomic<int> g_cap{static_cast<int>(Isa::kAvx512Bf16)};

}  // namespace

bool has_avx_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool yes = (__builtin_cpu_init(), __builtin_cpu_supports("avx2")) && avx_vnni();
  return yes;
#else
  return false;
#endif
}

bool avx_vnni_active() { return has_avx_vnni() && active_isa() >= Isa::kAvx2Vnni; }

Isa detected_isa() {
  static const Isa isa = detect();
  return isa;
}

Isa active_isa() {
  const int cap = g_cap.load(std::memory_order_relaxed);
  const Isa d = detected_isa();
  return static_cast<int>(d) < cap ? d : static_cast<Isa>(cap);
}

bool cap_isa(Isa isa) {
  g_cap.store(static_cast<int>(isa), std::memory_order_relaxed);
  if (!kX86) return true;
  dnnl_cpu_isa_t d = dnnl_cpu_isa_all;
  switch (isa) {
    case Isa::kBaseline: d = dnnl_cpu_isa_sse41; break;
    case Isa::kAvx2: d = dnnl_cpu_isa_avx2; break;
    case Isa::kAvx2Vnni: d = dnnl_cpu_isa_avx2_vnni; break;
    case Isa::kAvx512: d = dnnl_cpu_isa_avx512_core; break;
    case Isa::kAvx512Vnni: d = dnnl_cpu_isa_avx512_core_vnni; break;
    case Isa::kAvx512Bf16: d = dnnl_cpu_isa_avx512_core_bf16; break;
  }
  return dnnl_set_max_cpu_isa(d) == dnnl_success;
}

std::vector<Isa> runnable_isas() {
  std::vector<Isa> out;
  for (int i = 0; i <= static_cast<int>(detected_isa()); ++i) out.push_back(static_cast<Isa>(i));
  return out;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kBaseline: return kX86 ? "sse4.2" : "portable";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx2Vnni: return "avx2_vnni";
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx512Vnni: return "avx512_vnni";
    case Isa::kAvx512Bf16: return "avx512_bf16";
  }
  return "?";
}

std::optional<Isa> parse_isa(std::string_view name) {
  if (name == "baseline" || name == "portable" || name == "sse4.2") return Isa::kBaseline;
  if (name == "avx2") return Isa::kAvx2;
  if (name == "avx2_vnni") return Isa::kAvx2Vnni;
  if (name == "avx512") return Isa::kAvx512;
  if (name == "avx512_vnni") return Isa::kAvx512Vnni;
  if (name == "avx512_bf16") return Isa::kAvx512Bf16;
  return std::nullopt;
}

std::string onednn_isa_name() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_all: return "all";
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
  }
  return "unknown";
}

const char* build_baseline() {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__)
  return "avx2";
#elif defined(__SSE4_2__)
  return "sse4.2";
#else
  return "portable";
#endif
}

std::string isa_summary() { return std::string("kernels ") + isa_name(active_isa()) + ", oneDNN " + onednn_isa_name(); }

}  // namespace sd::cpu
