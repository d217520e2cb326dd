// The stem convolution's inner kernel (stem_conv.h), one variant per instruction set: the same
// source (stem_conv_rows.inc) compiled for the baseline, AVX2 and AVX-512, with as many output
// pixels in registers as each has registers for. StemConv picks one on each run by
// sd::cpu::active_isa(); tests call each directly.
#pragma once

#include <cstdint>

#include "core/cpu_isa.h"

namespace sd::native::ops {

struct StemConvGeometry {
  int64_t n, c, h, w, oc, kh, kw, oh, ow, sh, sw, pt, pl;
};

// The activation applied in registers before the store (a fused post op): one pass over the
// output instead of two. SiLU and sigmoid are not among them: their exp costs more in these
// registers (0.57 ns an element, 8-lane vectors) than a pass of activation_kernels.h over
// each finished row (0.2 ns).
enum class StemActivation { kNone, kRelu, kLeakyRelu, kHardSwish, kClip };

}  // namespace sd::native::ops

namespace sd::native::ops::stem {

// One call's inputs. packed: [oc / lanes][c][kh][kw][lanes] weights, 64-byte aligned; bias:
// [oc rounded up to lanes]; lanes: 8 or 16 output channels per vector.
struct RowArgs {
  StemConvGeometry g;
  const float* packed;
  const float* bias;
  int64_t lanes, ox_lo, ox_hi;
  StemActivation act;
  float alpha, beta;
  const float* src;
  bool src_nhwc;
  float* dst;  // [n, oh, ow, oc]
};

// Computes output row r (of n * oh) into a.dst.
using RowFn = void (*)(const RowArgs& a, int64_t r);

void row_baseline(const RowArgs& a, int64_t r);
#if defined(__x86_64__)
void row_avx2(const RowArgs& a, int64_t r);
void row_avx512(const RowArgs& a, int64_t r);
#endif

// The variant for `isa` (the highest one at or below it).
RowFn row_kernel(cpu::Isa isa);

}  // namespace sd::native::ops::stem
