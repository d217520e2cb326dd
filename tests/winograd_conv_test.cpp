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
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/bf16_convert.h"
#include "engine/native/cpu/winograd_conv.h"

namespace sd {
namespace {

using native::ops::WinoGemm;
using native::ops::WinoIo;
using native::ops::WinogradConv;
using native::ops::WinogradGeometry;
using native::ops::WinoPost;
using native::ops::WinoPostKind;
using native::ops::WinoTile;

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

// Runs `conv` on `threads` threads against the reference: the worst error relative to sum |x * w|
// below `tolerance`, its root mean square below a quarter of it. Returns the worst.
double expect_close(const WinogradConv& conv, const std::vector<float>& x, const std::vector<float>& sum,
                    const Reference& want, int threads, double tolerance, const char* name) {
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
  EXPECT_LT(rms, tolerance / 4) << conv.name() << ", " << name << ", " << threads << " threads: root mean square error";
  EXPECT_LT(worst, tolerance) << conv.name() << ", " << name << ", " << threads << " threads: output " << worst_at << " is " << y[worst_at]
                              << ", want " << want.y[worst_at];
  return worst;
}

// Random x, w, bias and residual for `g` (fixed seed), with the reference result.
struct CaseData {
  std::vector<float> x, w, b, sum;
  Reference want;
};
CaseData make_case(const WinoCase& k, std::mt19937& rng) {
  const WinogradGeometry& g = k.g;
  std::uniform_real_distribution<float> u(-1, 1);
  CaseData c;
  c.x.resize(static_cast<size_t>(g.n * g.h * g.w * g.c));
  c.w.resize(static_cast<size_t>(g.oc * g.c * 9));
  c.b.resize(static_cast<size_t>(g.oc));
  c.sum.resize(static_cast<size_t>(g.n * g.h * g.w * g.oc));
  for (auto* v : {&c.x, &c.w, &c.b, &c.sum})
    for (float& f : *v) f = u(rng);
  c.want = direct_conv(g, c.x, c.w, k.bias ? c.b.data() : nullptr, k.posts, c.sum);
  return c;
}

// Every case on the variant `isa` and `gemm` select, against the double-precision direct
// convolution (expect_close), on 1, 2 and 3 threads (blocks of six, and one block a thread where
// a thread has few tiles).
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
      // Blocks of six tiles whose last block is short (its GEMM rows are only the tiles there):
      // 25 tiles (6 + 6 + 6 + 6 + 1 on one thread) and 5 (a single block of 5).
      {"32->48 20x20 (25 tiles), SiLU", {1, 32, 20, 20, 48}, true, {{WinoPostKind::kSilu}}},
      {"48->32 17x4 (5 tiles), sum", {1, 48, 17, 4, 32}, true, {{WinoPostKind::kSum}}},
  };
  std::mt19937 rng(23);
  for (const WinoCase& k : cases) {
    const WinogradGeometry& g = k.g;
    const CaseData c = make_case(k, rng);
    const WinogradConv conv(g, c.w.data(), k.bias ? c.b.data() : nullptr, k.posts, isa, gemm);
    const bool wide = isa >= cpu::Isa::kAvx512 && g.c % 16 == 0 && g.oc % 16 == 0;
    const bool bf16 = wide && gemm == WinoGemm::kBf16 && isa >= cpu::Isa::kAvx512Bf16;
    EXPECT_STREQ(conv.name(), bf16   ? "streamdet:wino_4x3:avx512_bf16"
                              : wide ? "streamdet:wino_4x3:avx512"
                                     : "streamdet:wino_4x3:avx2")
        << k.name;
    EXPECT_EQ(conv.bf16(), bf16) << k.name;
    for (int threads : {1, 2, 3}) expect_close(conv, c.x, c.sum, c.want, threads, tolerance, k.name);
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

// The F(6x6, 3x3) cases, float32 and bf16: sizes that 6 does not divide, images smaller than a
// tile, 16 to 256 channels, every post op, and a layer whose threads take one block each.
std::vector<WinoCase> f6x6_cases() {
  return {
      {"24->40 7x8 (the AVX2 variant's channels), SiLU", {1, 24, 7, 8, 40}, true, {{WinoPostKind::kSilu}}},
      {"16->16 13x11, no bias", {1, 16, 13, 11, 16}, false, {}},
      {"32->48 7x9, SiLU", {1, 32, 7, 9, 48}, true, {{WinoPostKind::kSilu}}},
      {"two images 64->80 10x7, SiLU then sum", {2, 64, 10, 7, 80}, true, {{WinoPostKind::kSilu}, {WinoPostKind::kSum}}},
      {"80->80 21x19, sum then ReLU", {1, 80, 21, 19, 80}, true, {{WinoPostKind::kSum}, {WinoPostKind::kRelu}}},
      {"16->32 5x5 (smaller than a tile), LeakyRelu", {1, 16, 5, 5, 32}, true, {{WinoPostKind::kLeakyRelu, 0.1f}}},
      {"64->16 3x2, Clip", {1, 64, 3, 2, 16}, true, {{WinoPostKind::kClip, -0.5f, 0.5f}}},
      {"48->112 12x12 (whole tiles), HardSwish", {1, 48, 12, 12, 112}, false, {{WinoPostKind::kHardSwish}}},
      {"128->64 8x8, sigmoid", {1, 128, 8, 8, 64}, true, {{WinoPostKind::kSigmoid}}},
      {"256->256 20x20, SiLU", {1, 256, 20, 20, 256}, true, {{WinoPostKind::kSilu}}},
      {"256->128 9x14, sum", {1, 256, 9, 14, 128}, true, {{WinoPostKind::kSum}}},
      {"32->48 26x26 (25 tiles: one block a thread on 2 and 3), SiLU", {1, 32, 26, 26, 48}, true, {{WinoPostKind::kSilu}}},
  };
}

// F(6x6, 3x3) (WinoTile::k6x6, both float32 variants: AVX2, and AVX-512 where the processor has
// it) against the direct convolution: sizes that 6 does not divide (tiles overhanging the edge,
// images smaller than a tile), 16 to 256 channels, every post op, 1 and 2 threads. Channels not
// multiples of 16 take the AVX2 variant whatever the ISA; a bf16 GEMM keeps F(4x4, 3x3).
//
// Tolerance, from the matrices (winograd_transforms.inc, winograd_conv.cpp): the rounding error
// of each stage is proportional to the magnitudes it sums, so the output's error is bounded by a
// few float32 epsilons times S = sum_c |A^T| ((|G| |g_c| |G^T|) o (|B^T| |d_c| |B|)) |A|, the
// algorithm evaluated on absolute values. With |g| = |d| = 1 the 1D factor for output i is
// sum_j |A^T_ij| (|G| 1)_j (|B^T| 1)_j / 3 against the direct convolution's 3: for F(4x4) at most
// 16 (the last output: 1 + 8 + 8 in A^T's row times G's 1/6 and 1/24 rows times B^T's up to 10),
// for F(6x6) at most 22.6 (the first and last outputs: A^T's 1 and 32's times G's 2/3 and 1.24
// rows times B^T's up to 15). In 2D these square: 256 and 509, a ratio of 1.99. So F(6x6)'s
// bound is F(4x4)'s (1e-5 of sum |x * w|, about 6x what F(4x4) measures) times 2: 2e-5.
// Measured here: worst 4.7e-6 (two images 64->80), 0.3e-6 to 3e-6 on the others (F(4x4) on the
// same kind of cases: up to 1.6e-6), root mean square 2e-8 to 2.5e-7. One coefficient of A^T
// off by 0.3% (1/16 as 0.0627) gave 3.5e-5 to 8e-4 worst (2x to 40x the bound) on every case
// with outputs it reaches (not the 3x2 one), failing the test.
TEST(WinogradConv, F6x6VariantMatchesTheDirectConvolution) {
  if (cpu::detected_isa() < cpu::Isa::kAvx2) GTEST_SKIP() << "the Winograd kernel needs AVX2 + FMA; this processor has none";
  const std::vector<WinoCase> cases = f6x6_cases();
  constexpr double kTolerance = 2e-5;
  for (const cpu::Isa isa : {cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
    if (cpu::detected_isa() < isa) continue;  // that variant cannot run here
    std::mt19937 rng(66);
    for (const WinoCase& k : cases) {
      const CaseData c = make_case(k, rng);
      const WinogradConv conv(k.g, c.w.data(), k.bias ? c.b.data() : nullptr, k.posts, isa, WinoGemm::kFloat32,
                              native::ops::WinoTile::k6x6);
      const bool wide = isa >= cpu::Isa::kAvx512 && k.g.c % 16 == 0 && k.g.oc % 16 == 0;
      EXPECT_STREQ(conv.name(), wide ? "streamdet:wino_6x3:avx512" : "streamdet:wino_6x3:avx2") << k.name;
      EXPECT_EQ(conv.tile(), native::ops::WinoTile::k6x6) << k.name;
      const std::string what = k.name + std::string(" on ") + cpu::isa_name(isa);
      for (int threads : {1, 2}) expect_close(conv, c.x, c.sum, c.want, threads, kTolerance, what.c_str());
    }
  }
}

// F(6x6, 3x3) with the bf16 GEMM (--precision bf16 where the load-time timing takes it, maps of
// 48 and more): the F(6x6) cases above against the direct convolution. Tolerance: the bf16
// rounding of V and U (2^-9 each) goes through F(6x6)'s larger transforms (B^T rows up to 12.5 in
// magnitude against F(4x4)'s 10, A^T's up to 67 against 17); measured on ten of these cases 3.4e-3 to 8.1e-2 worst
// of sum |x * w| (bf16 F(4x4) on the same cases: 1.2e-3 to 2.6e-2), so the bound is 0.15 worst and
// 0.0375 root mean square, about twice the worst measured; a wrong tap, coefficient or channel
// pair gives errors of 0.1 to 1 on most outputs, which the root mean square catches.
TEST(WinogradConv, F6x6Bf16VariantMatchesTheDirectConvolutionToBf16Precision) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512Bf16)
    GTEST_SKIP() << "the bf16 variant needs AVX512_BF16; this processor has " << cpu::isa_name(cpu::detected_isa());
  std::mt19937 rng(66);
  for (const WinoCase& k : f6x6_cases()) {
    if (k.g.c % 16 != 0 || k.g.oc % 16 != 0) continue;  // the bf16 variant's channels
    const CaseData c = make_case(k, rng);
    const WinogradConv conv(k.g, c.w.data(), k.bias ? c.b.data() : nullptr, k.posts, cpu::Isa::kAvx512Bf16, WinoGemm::kBf16,
                            native::ops::WinoTile::k6x6);
    EXPECT_STREQ(conv.name(), "streamdet:wino_6x3:avx512_bf16") << k.name;
    EXPECT_TRUE(conv.bf16()) << k.name;
    EXPECT_EQ(conv.tile(), native::ops::WinoTile::k6x6) << k.name;
    for (int threads : {1, 2, 3}) expect_close(conv, c.x, c.sum, c.want, threads, 0.15, k.name);
  }
}

// Tensors inside wider ones (the planner's Split parts read in place and Concat outputs written in
// place, exec/plan_concat.cpp): a source, residual sum and destination each a column of wider
// pixels give the dense run's result bit for bit, and nothing outside their columns is read (NaN
// there) or written. Both tiles, every float32 variant the processor runs, 1 and 2 threads.
TEST(WinogradConv, StridedSourceSumAndDestinationGiveTheDenseResult) {
  if (cpu::detected_isa() < cpu::Isa::kAvx2) GTEST_SKIP() << "the Winograd kernel needs AVX2 + FMA; this processor has none";
  const WinoCase cases[] = {
      {"two images 64->80 10x7, SiLU then sum", {2, 64, 10, 7, 80}, true, {{WinoPostKind::kSilu}, {WinoPostKind::kSum}}},
      {"16->16 13x11, sum", {1, 16, 13, 11, 16}, true, {{WinoPostKind::kSum}}},
      {"24->40 9x17, SiLU", {1, 24, 9, 17, 40}, true, {{WinoPostKind::kSilu}}},
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::mt19937 rng(5);
  for (const cpu::Isa isa : {cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
    if (cpu::detected_isa() < isa) continue;
    for (const WinoTile tile : {WinoTile::k4x4, WinoTile::k6x6})
      for (const WinoCase& k : cases) {
        const WinogradGeometry& g = k.g;
        const CaseData c = make_case(k, rng);
        const WinogradConv conv(g, c.w.data(), k.bias ? c.b.data() : nullptr, k.posts, isa, WinoGemm::kFloat32, tile);
        const int64_t pixels = g.n * g.h * g.w;
        // Each a column `at` floats into pixels of `stride` floats.
        const int64_t xs = g.c + 24, xat = 8, ss = g.oc + 16, sat = 16, ys = g.oc + 40, yat = 24;
        std::vector<float> x(static_cast<size_t>(pixels * xs), nan), sum(static_cast<size_t>(pixels * ss), nan);
        std::vector<float> y(static_cast<size_t>(pixels * ys), -7.f);
        for (int64_t p = 0; p < pixels; ++p) {
          std::copy_n(c.x.begin() + p * g.c, g.c, x.begin() + p * xs + xat);
          std::copy_n(c.sum.begin() + p * g.oc, g.oc, sum.begin() + p * ss + sat);
        }
        const std::string what = k.name + std::string(", ") + conv.name();
        for (int threads : {1, 2}) {
          std::vector<float> dense(static_cast<size_t>(pixels * g.oc));
          conv.run(c.x.data(), dense.data(), c.sum.data(), threads);
          conv.run(x.data() + xat, y.data() + yat, sum.data() + sat, threads, {xs, ys, ss});
          int64_t differ = 0, outside = 0;
          for (int64_t p = 0; p < pixels; ++p)
            for (int64_t i = 0; i < ys; ++i) {
              const float v = y[static_cast<size_t>(p * ys + i)];
              if (i < yat || i >= yat + g.oc)
                outside += v != -7.f;
              else
                differ += std::memcmp(&v, &dense[static_cast<size_t>(p * g.oc + i - yat)], sizeof v) != 0;
            }
          EXPECT_EQ(differ, 0) << what << ", " << threads << " threads: outputs unlike the dense run's";
          EXPECT_EQ(outside, 0) << what << ", " << threads << " threads: floats written outside the destination's columns";
        }
      }
  }
}

// --precision bf16's tensors kept bf16 (precision.h): the source and the residual operand read as
// bf16 and the result written as bf16, each strided inside wider pixels, give the bits of the
// dense float32 run that rounds its inputs to bf16 as it reads them (round_inputs_to_bf16; the
// float32-tensor plan), and that run is the plain run on the rounded values. Every AVX-512
// variant (float32 and bf16 GEMM), both tiles.
TEST(WinogradConv, Bf16TensorsStridedGiveTheBitsOfTheRunRoundingItsInputs) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512) GTEST_SKIP() << "bf16 tensors are for the AVX-512 variants; this processor has no AVX-512";
  const WinoCase cases[] = {
      {"two images 64->80 10x7, SiLU then sum", {2, 64, 10, 7, 80}, true, {{WinoPostKind::kSilu}, {WinoPostKind::kSum}}},
      {"16->32 13x11, sum then SiLU", {1, 16, 13, 11, 32}, true, {{WinoPostKind::kSum}, {WinoPostKind::kSilu}}},
      {"32->48 9x17, SiLU", {1, 32, 9, 17, 48}, true, {{WinoPostKind::kSilu}}},
  };
  std::mt19937 rng(9);
  for (const WinoGemm gemm : {WinoGemm::kFloat32, WinoGemm::kBf16}) {
    if (gemm == WinoGemm::kBf16 && cpu::detected_isa() < cpu::Isa::kAvx512Bf16) continue;
    for (const WinoTile tile : {WinoTile::k4x4, WinoTile::k6x6})
      for (const WinoCase& k : cases) {
        const WinogradGeometry& g = k.g;
        const CaseData c = make_case(k, rng);
        WinogradConv conv(g, c.w.data(), k.bias ? c.b.data() : nullptr, k.posts, cpu::Isa::kAvx512, gemm, tile);
        ASSERT_TRUE(conv.bf16_io());
        const int64_t pixels = g.n * g.h * g.w;
        // bf16 copies, each a column `at` elements into pixels of `stride`; the rounded values.
        const int64_t xs = g.c + 32, xat = 16, ss = g.oc + 16, sat = 16, ys = g.oc + 48, yat = 32;
        std::vector<uint16_t> x(static_cast<size_t>(pixels * xs), 0x7fc0), sum(static_cast<size_t>(pixels * ss), 0x7fc0);
        std::vector<uint16_t> y(static_cast<size_t>(pixels * ys), 0x1234);
        std::vector<float> xr(c.x.size()), sr(c.sum.size());
        for (int64_t p = 0; p < pixels; ++p) {
          for (int64_t i = 0; i < g.c; ++i) {
            const uint16_t b = native::ops::float_to_bf16_rne(c.x[static_cast<size_t>(p * g.c + i)]);
            x[static_cast<size_t>(p * xs + xat + i)] = b;
            xr[static_cast<size_t>(p * g.c + i)] = native::ops::bf16_to_float(b);
          }
          for (int64_t i = 0; i < g.oc; ++i) {
            const uint16_t b = native::ops::float_to_bf16_rne(c.sum[static_cast<size_t>(p * g.oc + i)]);
            sum[static_cast<size_t>(p * ss + sat + i)] = b;
            sr[static_cast<size_t>(p * g.oc + i)] = native::ops::bf16_to_float(b);
          }
        }
        const std::string what = k.name + std::string(", ") + conv.name();
        for (int threads : {1, 2}) {
          std::vector<uint16_t> plain(static_cast<size_t>(pixels * g.oc)), rounding(plain.size());
          conv.round_inputs_to_bf16(false);
          conv.run(xr.data(), nullptr, sr.data(), threads, {}, plain.data());
          conv.round_inputs_to_bf16(true);
          conv.run(c.x.data(), nullptr, c.sum.data(), threads, {}, rounding.data());
          EXPECT_EQ(plain, rounding) << what << ", " << threads << " threads: rounding the inputs is not running on the rounded values";
          WinoIo io;
          io.src_bf16 = x.data() + xat, io.sum_bf16 = sum.data() + sat, io.dst_bf16 = y.data() + yat;
          conv.round_inputs_to_bf16(false);
          conv.run(io, threads, {xs, ys, ss});
          int64_t differ = 0, outside = 0;
          for (int64_t p = 0; p < pixels; ++p)
            for (int64_t i = 0; i < ys; ++i) {
              const uint16_t v = y[static_cast<size_t>(p * ys + i)];
              if (i < yat || i >= yat + g.oc)
                outside += v != 0x1234;
              else
                differ += v != plain[static_cast<size_t>(p * g.oc + i - yat)];
            }
          EXPECT_EQ(differ, 0) << what << ", " << threads << " threads: bf16 tensors unlike the float32 run on their values";
          EXPECT_EQ(outside, 0) << what << ", " << threads << " threads: written outside the destination's columns";
        }
      }
  }
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
