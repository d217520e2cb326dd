// SiLU and sigmoid over contiguous float buffers: the activations YOLO puts after nearly every
// convolution (about a million of them in the bundled tiny model at 256x256), run where a
// convolution's output is still in cache.
//
// Why hand-written: the per-element cost sets the floor here. oneDNN's fused swish post op and a
// plain loop over fast_sigmoid both cost ~0.5 ns an element on this project's machines (about 20
// vector operations per vector, among them a division). With AVX-512VL these kernels build
// 2^n with vscalefps (no integer exponent arithmetic, and no clamp against overflow of it),
// evaluate e^r with a degree-5 minimax polynomial (2e-7 relative) and replace the division by
// a reciprocal estimate and one Newton step: 17 operations on 8 floats, in 256-bit registers
// (where 512-bit instructions issue at half rate, as on Zen 5, they gain nothing). Without
// AVX-512VL they fall back to the portable fast_sigmoid loop.
#pragma once

#include <cstdint>

namespace sd::native::ops {

// y[i] = x[i] * sigmoid(x[i]); x == y is allowed. Relative error ~1e-6 against the exact value
// (NaN stays NaN; inputs below -80 give x * 1.8e-35, i.e. -0 to within float precision).
void silu(const float* x, float* y, int64_t n);

// y[i] = 1 / (1 + e^-x[i]); x == y is allowed. Same accuracy as silu.
void sigmoid(const float* x, float* y, int64_t n);

// Which implementation the two above run: "avx512vl" or "portable".
const char* activation_kernels_isa();

}  // namespace sd::native::ops
