// SiLU and sigmoid for AVX2 + FMA (compiled with -march=x86-64-v3): the portable loop over
// fast_sigmoid, which the compiler vectorizes to 8 floats a register here (fast_exp_of: a
// degree-6 polynomial and an exponent built with integer shifts; AVX2 has no vscalefps and its
// vpermps table trick would need a 16-entry table in two registers).
#define STREAMDET_ISA_VARIANT avx2
#include "engine/native/cpu/activation_variants.h"
#include "engine/native/cpu/fast_math.h"

namespace sd::native::ops::activation {

void silu_avx2(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * fast_sigmoid(x[i]);
}

void sigmoid_avx2(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fast_sigmoid(x[i]);
}

}  // namespace sd::native::ops::activation
