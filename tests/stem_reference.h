// The stem convolution by its definition, for the tests of its kernels (cpu_isa_variants_test.cpp:
// the float32 variants; stem_conv_bf16_test.cpp: the bf16 one, given bf16-rounded operands):
// NCHW (or NHWC) in, NHWC out, summed in double, then the activation.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/native/cpu/stem_conv_kernel.h"

namespace sd::test {

inline std::vector<float> reference_stem_conv(const native::ops::StemConvGeometry& g, const std::vector<float>& x, bool nhwc,
                                              const std::vector<float>& w, const std::vector<float>& b,
                                              native::ops::StemActivation act = native::ops::StemActivation::kNone, float alpha = 0,
                                              float beta = 0) {
  using native::ops::StemActivation;
  std::vector<float> y(static_cast<size_t>(g.n * g.oh * g.ow * g.oc));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox)
        for (int64_t o = 0; o < g.oc; ++o) {
          double acc = b[static_cast<size_t>(o)];
          for (int64_t c = 0; c < g.c; ++c)
            for (int64_t ky = 0; ky < g.kh; ++ky)
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                const int64_t iy = oy * g.sh - g.pt + ky, ix = ox * g.sw - g.pl + kx;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                const int64_t xi = nhwc ? ((n * g.h + iy) * g.w + ix) * g.c + c : ((n * g.c + c) * g.h + iy) * g.w + ix;
                acc += double{x[static_cast<size_t>(xi)]} * w[static_cast<size_t>(((o * g.c + c) * g.kh + ky) * g.kw + kx)];
              }
          float v = static_cast<float>(acc);
          switch (act) {
            case StemActivation::kNone: break;
            case StemActivation::kRelu: v = std::max(v, 0.f); break;
            case StemActivation::kLeakyRelu: v = v >= 0 ? v : v * alpha; break;
            case StemActivation::kHardSwish: v = v * std::clamp(v / 6.f + 0.5f, 0.f, 1.f); break;
            case StemActivation::kClip: v = std::clamp(v, alpha, beta); break;
          }
          y[static_cast<size_t>(((n * g.oh + oy) * g.ow + ox) * g.oc + o)] = v;
        }
  return y;
}

}  // namespace sd::test
