// SiLU and sigmoid over contiguous float buffers: the activations YOLO puts after nearly every
// convolution (about a million of them in the bundled tiny model at 256x256), run where a
// convolution's output is still in cache.
//
// Why hand-written: the per-element cost sets the floor here. oneDNN's fused swish post op and a
// plain loop over fast_sigmoid cost 0.36-0.5 ns an element on this project's machines; these
// kernels 0.19 ns (bench/activation_bench.cpp). With AVX-512 they compute e^-x as 2^(k/16) * e^r:
// 2^(j/16) from a 16-entry table held in one register (vpermps, indexed by the low bits of the
// rounded k), the power of two applied by vscalefps, e^r a degree-2 polynomial on |r| <= ln2/32,
// then one division: about 12 operations per 16 floats. Here 512-bit registers beat 256-bit ones
// (0.19 against 0.26 ns): the work is bound by instruction count, not by FMA throughput. With AVX2
// the same construction on 8 floats (sigmoid_avx2.h: an 8-entry table, the power of two built in
// the exponent bits, vrcpps and two Newton steps); the baseline runs the fast_sigmoid loop
// (variants chosen at run time: activation_variants.h).
#pragma once

#include <cstdint>

#include "core/cpu_isa.h"

namespace sd::native::ops {

// y[i] = x[i] * sigmoid(x[i]); x == y is allowed. Relative error ~1e-6 against the exact value
// (NaN stays NaN; inputs below -80 give x * 1.8e-35, i.e. -0 to within float precision).
void silu(const float* x, float* y, int64_t n);

// y[i] = 1 / (1 + e^-x[i]); x == y is allowed. Same accuracy as silu.
void sigmoid(const float* x, float* y, int64_t n);

// The variant for `isa` (the highest at or below it), which the processor must be able to run.
void silu_isa(cpu::Isa isa, const float* x, float* y, int64_t n);
void sigmoid_isa(cpu::Isa isa, const float* x, float* y, int64_t n);

// Which variant the two above run: "avx512", "avx2" or the baseline's name (cpu::isa_name).
const char* activation_kernels_isa();

}  // namespace sd::native::ops
