// SiLU and sigmoid for AVX2 + FMA (compiled with -march=x86-64-v3): fast_exp_of on 8-float
// vectors (a degree-6 polynomial and an exponent built with integer shifts; AVX2 has no
// vscalefps, and the AVX-512 table trick would need its 16 entries in two registers).
#define STREAMDET_ISA_VARIANT avx2
#include "engine/native/cpu/activation_variants.h"
#include <cstring>

#include "engine/native/cpu/fast_math.h"

namespace sd::native::ops::activation {
namespace {
#include "engine/native/cpu/activation_loop.inc"
}  // namespace

void silu_avx2(const float* x, float* y, int64_t n) { activation_loop<f32x8, true>(x, y, n); }
void sigmoid_avx2(const float* x, float* y, int64_t n) { activation_loop<f32x8, false>(x, y, n); }

}  // namespace sd::native::ops::activation
