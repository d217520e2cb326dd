// IEEE 754 binary16 ("fp16", CUDA's __half) on the host: the conversions the GPU's fp16 storage
// uses (round to nearest, ties to even, as __float2half_rn; overflow to infinity; subnormals kept;
// NaN stays NaN), so that the planner can convert constants once when it uploads them, the test
// device backend can emulate fp16 storage by rounding, and the tests have a reference for what
// the GPU's conversion kernels must produce.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sd::native {

uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
// f as fp16 storage gives it back: float_to_half then half_to_float.
inline float round_to_half(float f) { return half_to_float(float_to_half(f)); }

void floats_to_halves(const float* src, uint16_t* dst, size_t count);
void halves_to_floats(const uint16_t* src, float* dst, size_t count);

// Relative spacing of fp16 numbers (2^-10) and its rounding error (half of it): a value stored as
// fp16 is within kHalfRoundingError * |x| of x in the normal range (|x| >= 6.1e-5).
inline constexpr double kHalfEpsilon = 1.0 / 1024;
inline constexpr double kHalfRoundingError = 1.0 / 2048;
inline constexpr float kHalfMax = 65504.f;

}  // namespace sd::native
