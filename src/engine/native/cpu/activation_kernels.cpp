#include "engine/native/cpu/activation_kernels.h"

#include <cstring>

#include "engine/native/cpu/activation_variants.h"
#include "engine/native/cpu/fast_math.h"

namespace sd::native::ops {
namespace activation {
namespace {
#include "engine/native/cpu/activation_loop.inc"
}  // namespace

void silu_baseline(const float* x, float* y, int64_t n) { activation_loop<f32x4, true>(x, y, n); }
void sigmoid_baseline(const float* x, float* y, int64_t n) { activation_loop<f32x4, false>(x, y, n); }

}  // namespace activation

void silu_isa(cpu::Isa isa, const float* x, float* y, int64_t n) {
#if defined(__x86_64__)
  if (isa >= cpu::Isa::kAvx512) return activation::silu_avx512(x, y, n);
  if (isa >= cpu::Isa::kAvx2) return activation::silu_avx2(x, y, n);
#endif
  activation::silu_baseline(x, y, n);
}

void sigmoid_isa(cpu::Isa isa, const float* x, float* y, int64_t n) {
#if defined(__x86_64__)
  if (isa >= cpu::Isa::kAvx512) return activation::sigmoid_avx512(x, y, n);
  if (isa >= cpu::Isa::kAvx2) return activation::sigmoid_avx2(x, y, n);
#endif
  activation::sigmoid_baseline(x, y, n);
}

void silu(const float* x, float* y, int64_t n) { silu_isa(cpu::active_isa(), x, y, n); }
void sigmoid(const float* x, float* y, int64_t n) { sigmoid_isa(cpu::active_isa(), x, y, n); }

const char* activation_kernels_isa() { return cpu::isa_name(cpu::active_isa() >= cpu::Isa::kAvx512 ? cpu::Isa::kAvx512 : cpu::active_isa()); }

}  // namespace sd::native::ops
