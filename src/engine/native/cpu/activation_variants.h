// The ISA variants of activation_kernels.h, each in a file of its own compiled with its ISA's
// flags (activation_kernels_avx2.cpp, activation_kernels_avx512.cpp); the portable one is in
// activation_kernels.cpp. Called through silu()/sigmoid() (sd::cpu::active_isa()) or, by the
// tests, through silu_isa()/sigmoid_isa().
#pragma once

#include <cstdint>

namespace sd::native::ops::activation {

void silu_baseline(const float* x, float* y, int64_t n);
void sigmoid_baseline(const float* x, float* y, int64_t n);
#if defined(__x86_64__)
void silu_avx2(const float* x, float* y, int64_t n);
void sigmoid_avx2(const float* x, float* y, int64_t n);
void silu_avx512(const float* x, float* y, int64_t n);
void sigmoid_avx512(const float* x, float* y, int64_t n);
#endif

}  // namespace sd::native::ops::activation
