// The Winograd F(4x4, 3x3) convolution (cpu/winograd_conv.h), its AVX2 and its AVX-512 variant,
// against a direct convolution computed in double, on random data: sizes that are not multiples
// of the 4x4 tile, images smaller than a tile, 16/24/64/80 channels (24: a panel of 16 and one of
// 8 for AVX2, and the AVX2 variant where AVX-512 was asked for), 48 and 112 output channels (the
// AVX-512 variant's narrower last panels), with and without bias, each post op, a residual sum,
// 1 and 3 threads.
//
// Tolerance: Winograd's float error grows with the transforms' constants (A^T up to 8, B^T up to
// 5, G's 1/6 and 1/24), not with the number of channels alone: for F(4x4, 3x3) in float32 the
// error is about 1e-6 to 1e-5 of the magnitude the output is summed from (Barabasz et al., "Error
// analysis and improving the accuracy of Winograd convolution", 2020, report ~2-4 bits more error
// than direct). Here the error is bounded relative to sum |x * w| over the output's window and
// channels (the scale any float32 convolution's rounding error has): 1e-5 of it, about 6x the
// worst case these shapes measured (1.6e-6, on 16 channels; 0.3e-6 to 1.1e-6 on the others; a
// direct float32 convolution stays near 1e-7); a wrong transform coefficient or tap gives errors
// of order 0.1 to 1 of it.
//
// The bf16 variant (--precision bf16) rounds the transformed input V = B^T d B and weights
// U = G g G^T to bf16 (8 significant bits: a relative error of at most 2^-9 each, so about 2^-8
// on each product V_p U_p), sums in float32 and transforms back in float32. Its error is about
// 2^-8 of sum_p |A-coefficients| |V_p U_p|, and that sum is much larger than sum |x * w|: B^T's
// rows have magnitudes up to 10 (|4| + |5| + |1|), A^T's up to 17 (1 + 8 + 8), in both directions.
// So bf16 Winograd F(4x4, 3x3) is far less accurate than a bf16 direct convolution: a simulation
// in double with U and V rounded to bf16 (random data, 16 and 64 channels, 200 tiles each) gave
// worst errors of 1.1e-2 to 2.7e-2 of sum |x * w|, a bf16 direct convolution 4e-4 to 8e-4; this
// kernel measured 1.4e-3 to 2.3e-2 worst and 2e-4 to 2.5e-3 root mean square on the cases here.
// Bounds: 6e-2 worst and 1.5e-2 root mean square (tolerance / 4), over twice what bf16 gives;
// a wrong tap, coefficient or channel pair puts errors of 0.1 to 1 on most outputs.
// (Whole-model accuracy with it: docs/benchmarks.md, "bf16 Winograd (issue 23)".)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/winograd_conv.h"

namespace sd {
namespace {

using native::ops::WinoGemm;
using native::ops::WinogradConv;
using native::ops::WinogradGeometry;
using native::ops::WinoPost;
using native::ops::WinoPostKind;

struct Reference {
  std::vector<float> y;
  std::vector<double> scale;  // sum |x * w| (+ |bias|) per output
};

// Direct 3x3 stride-1 pad-1 convolution, NHWC in and out, in double; then the post ops in order.
Reference direct_conv(const WinogradGeometry& g, const std::vector<float>& x, const std::vector<float>& w, const float* bias,
                      const std::vector<WinoPost>& posts, const std::vector<float>& sum) {
  Reference r;
  r.y.resize(static_cast<size_t>(g.n * g.h * g.w * g.oc));
  r.scale.resize(r.y.size());
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oy = 0; oy < g.h; ++oy)
      for (int64_t ox = 0; ox < g.w; ++ox)
        for (int64_t o = 0; o < g.oc; ++o) {
          double acc = bias ? bias[o] : 0.0, mag = bias ? std::fabs(bias[o]) : 0.0;
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 3; ++kx) {
              const int64_t iy = oy - 1 + ky, ix = ox - 1 + kx;
              if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
              for (int64_t c = 0; c < g.c; ++c) {
                const double p = double{x[static_cast<size_t>(((n * g.h + iy) * g.w + ix) * g.c + c)]} *
                                 w[static_cast<size_t>(((o * g.c + c) * 3 + ky) * 3 + kx)];
                acc += p, mag += std::fabs(p);
              }
            }
          const size_t at = static_cast<size_t>(((n * g.h + oy) * g.w + ox) * g.oc + o);
          for (const WinoPost& p : posts) {
            switch (p.kind) {
              case WinoPostKind::kRelu: acc = std::max(acc, 0.0); break;
              case WinoPostKind::kLeakyRelu: acc = acc >= 0 ? acc : acc * p.alpha; break;
              case WinoPostKind::kSilu: acc = acc / (1 + std::exp(-acc)); break;
              case WinoPostKind::kSigmoid: acc = 1 / (1 + std::exp(-acc)); break;
              case WinoPostKind::kHardSwish: acc = acc * std::clamp(acc / 6 + 0.5, 0.0, 1.0); break;
              case WinoPostKind::kClip: acc = std::clamp(acc, double{p.alpha}, double{p.beta}); break;
              case WinoPostKind::kSum: acc += sum[at], mag += std::fabs(sum[at]); break;
            }
          }
          r.y[at] = static_cast<float>(acc);
          r.scale[at] = mag;
        }
  return r;
}

struct WinoCase {
  const char* name;
  WinogradGeometry g;
  bool bias;
  std::vector<WinoPost> posts;
};

// Every case on the variant `isa` and `gemm` select, against the double-precision direct
// convolution: the worst error relative to sum |x * w| below `tolerance`, its root mean square
// below a quarter of it.
void expect_matches_direct(cpu::Isa isa, WinoGemm gemm = WinoGemm::kFloat32, double tolerance = 1e-5) {
  const WinoCase cases[] = {
      {"16->16 13x11, no bias", {1, 16, 13, 11, 16}, false, {}},
      {"24->24 9x17, SiLU", {1, 24, 9, 17, 24}, true, {{WinoPostKind::kSilu}}},
      {"two images 64->80 10x7, SiLU then sum", {2, 64, 10, 7, 80}, true, {{WinoPostKind::kSilu}, {WinoPostKind::kSum}}},
      {"80->80 21x19, sum then ReLU", {1, 80, 21, 19, 80}, true, {{WinoPostKind::kSum}, {WinoPostKind::kRelu}}},
      {"16->24 5x5, LeakyRelu", {1, 16, 5, 5, 24}, true, {{WinoPostKind::kLeakyRelu, 0.1f}}},
      {"64->16 3x2 (smaller than a tile), Clip", {1, 64, 3, 2, 16}, true, {{WinoPostKind::kClip, -0.5f, 0.5f}}},
      {"24->40 6x14, HardSwish", {1, 24, 6, 14, 40}, false, {{WinoPostKind::kHardSwish}}},
      {"80->64 8x8, sigmoid", {1, 80, 8, 8, 64}, true, {{WinoPostKind::kSigmoid}}},
      {"32->48 7x9, SiLU", {1, 32, 7, 9, 48}, true, {{WinoPostKind::kSilu}}},
      {"16->112 6x5, sum", {1, 16, 6, 5, 112}, false, {{WinoPostKind::kSum}}},
  };
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const WinoCase& k : cases) {
    const WinogradGeometry& g = k.g;
    std::vector<float> x(static_cast<size_t>(g.n * g.h * g.w * g.c)), w(static_cast<size_t>(g.oc * g.c * 9)),
        b(static_cast<size_t>(g.oc)), sum(static_cast<size_t>(g.n * g.h * g.w * g.oc));
    for (auto* v : {&x, &w, &b, &sum})
      for (float& f : *v) f = u(rng);
    const auto want = direct_conv(g, x, w, k.bias ? b.data() : nullptr, k.posts, sum);
    const WinogradConv conv(g, w.data(), k.bias ? b.data() : nullptr, k.posts, isa, gemm);
    const bool wide = isa >= cpu::Isa::kAvx512 && g.c % 16 == 0 && g.oc % 16 == 0;
    const bool bf16 = wide && gemm == WinoGemm::kBf16 && isa >= cpu::Isa::kAvx512Bf16;
    EXPECT_STREQ(conv.name(), bf16   ? "streamdet:wino_4x3:avx512_bf16"
                              : wide ? "streamdet:wino_4x3:avx512"
                                     : "streamdet:wino_4x3:avx2")
        << k.name;
    EXPECT_EQ(conv.bf16(), bf16) << k.name;
    for (int threads : {1, 3}) {
      std::vector<float> y(want.y.size(), std::numeric_limits<float>::quiet_NaN());
      conv.run(x.data(), y.data(), sum.data(), threads);
      double worst = 0, squares = 0;
      size_t worst_at = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        const double err = std::fabs(double{y[i]} - want.y[i]) / want.scale[i];
        if (!(err <= worst)) worst = err, worst_at = i;  // NaN (an output never written) counts as worst
        squares += err * err;
      }
      const double rms = std::sqrt(squares / static_cast<double>(y.size()));
      EXPECT_LT(rms, tolerance / 4) << conv.name() << ", " << k.name << ", " << threads << " threads: root mean square error";
      EXPECT_LT(worst, tolerance) << conv.name() << ", " << k.name << ", " << threads << " threads: output " << worst_at << " is "
                             << y[worst_at] << ", want " << want.y[worst_at];
    }
  }
}

TEST(WinogradConv, MatchesTheDirectConvolution) {
  if (cpu::detected_isa() < cpu::Isa::kAvx2) GTEST_SKIP() << "the Winograd kernel needs AVX2 + FMA; this processor has none";
  expect_matches_direct(cpu::Isa::kAvx2);
}

TEST(WinogradConv, Avx512VariantMatchesTheDirectConvolution) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512)
    GTEST_SKIP() << "the AVX-512 variant needs AVX-512 F/BW/DQ/VL; this processor has " << cpu::isa_name(cpu::detected_isa());
  expect_matches_direct(cpu::Isa::kAvx512);
}

TEST(WinogradConv, Bf16VariantMatchesTheDirectConvolutionToBf16Precision) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512Bf16)
    GTEST_SKIP() << "the bf16 variant needs AVX512_BF16; this processor has " << cpu::isa_name(cpu::detected_isa());
  expect_matches_direct(cpu::Isa::kAvx512Bf16, WinoGemm::kBf16, 6e-2);
}

// Below AVX512_BF16 a bf16 request gets the float32 variants, with their float32 accuracy.
TEST(WinogradConv, Bf16RequestWithoutAvx512Bf16TakesTheFloat32Variant) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512)
    GTEST_SKIP() << "needs AVX-512 F/BW/DQ/VL; this processor has " << cpu::isa_name(cpu::detected_isa());
  expect_matches_direct(cpu::Isa::kAvx512Vnni, WinoGemm::kBf16);
}

TEST(WinogradConv, TakesOnlyThe3x3Stride1Pad1Shapes) {
  EXPECT_TRUE(WinogradConv::applies(64, 80, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1));
  EXPECT_TRUE(WinogradConv::applies(16, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1));
  EXPECT_FALSE(WinogradConv::applies(8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1)) << "fewer than 16 channels";
  EXPECT_FALSE(WinogradConv::applies(20, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1)) << "channels not a multiple of 8";
  EXPECT_FALSE(WinogradConv::applies(16, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1)) << "output channels not a multiple of 8";
  EXPECT_FALSE(WinogradConv::applies(64, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1)) << "stride 2";
  EXPECT_FALSE(WinogradConv::applies(64, 64, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0)) << "1x1";
  EXPECT_FALSE(WinogradConv::applies(64, 64, 3, 3, 1, 1, 2, 2, 1, 2, 2, 2, 2)) << "dilation 2";
  EXPECT_FALSE(WinogradConv::applies(64, 64, 3, 3, 1, 1, 1, 1, 64, 1, 1, 1, 1)) << "depthwise";
  EXPECT_FALSE(WinogradConv::applies(64, 64, 3, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0)) << "no padding";
}

}  // namespace
}  // namespace sd
