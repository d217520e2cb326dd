// Our 1x1 convolution (cpu/pointwise_conv.h), each variant this processor runs (AVX2, AVX-512),
// against a 1x1 convolution computed in double, on random data: pixel counts around its blocks
// of 48 and its 6-row micro-kernel (1, 5, 47, 48, 49, 301), channels not a multiple of anything
// (3, 33), output channels in each panel width (AVX-512: 16, 32, 48, 64, 80 as 48 + 32, 112, 256;
// AVX2: 16 and a last 8, and 24 on AVX-512, which takes the AVX2 variant), with and without bias,
// each post op, a residual sum, 1 to 3 threads; and strided source, sum and destination giving
// the dense run's bits; the bf16 variant against the 1x1 convolution of bf16-rounded values.
//
// Tolerance: a float32 dot product's rounding error is about k * 2^-24 of sum |x * w| at worst;
// here 1e-6 of it (k up to 192: a few 1e-7 expected), while a wrong weight, tap or panel gives
// errors of order 0.1 to 1 of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/pointwise_conv.h"

namespace sd {
namespace {

using native::ops::PointwiseConv;
using native::ops::PointwiseGeometry;
using native::ops::WinoPost;
using native::ops::WinoPostKind;

struct Case {
  const char* name;
  PointwiseGeometry g;
  bool bias;
  std::vector<WinoPost> posts;
};

struct Data {
  std::vector<float> x, w, b, sum, want;
  std::vector<double> scale;  // sum |x * w| (+ |bias|, + |sum|) per output
};

// want and scale from d's x, w, b and sum.
void compute_reference(const Case& k, Data& d) {
  const PointwiseGeometry& g = k.g;
  d.want.resize(d.sum.size());
  d.scale.resize(d.sum.size());
  for (int64_t p = 0; p < g.pixels; ++p)
    for (int64_t o = 0; o < g.oc; ++o) {
      double acc = k.bias ? d.b[static_cast<size_t>(o)] : 0.0, mag = std::fabs(acc);
      for (int64_t c = 0; c < g.c; ++c) {
        const double prod = double{d.x[static_cast<size_t>(p * g.c + c)]} * d.w[static_cast<size_t>(o * g.c + c)];
        acc += prod, mag += std::fabs(prod);
      }
      const size_t at = static_cast<size_t>(p * g.oc + o);
      for (const WinoPost& q : k.posts) {
        switch (q.kind) {
          case WinoPostKind::kRelu: acc = std::max(acc, 0.0); break;
          case WinoPostKind::kLeakyRelu: acc = acc >= 0 ? acc : acc * q.alpha; break;
          case WinoPostKind::kSilu: acc = acc / (1 + std::exp(-acc)); break;
          case WinoPostKind::kSigmoid: acc = 1 / (1 + std::exp(-acc)); break;
          case WinoPostKind::kHardSwish: acc = acc * std::clamp(acc / 6 + 0.5, 0.0, 1.0); break;
          case WinoPostKind::kClip: acc = std::clamp(acc, double{q.alpha}, double{q.beta}); break;
          case WinoPostKind::kSum: acc += d.sum[at], mag += std::fabs(d.sum[at]); break;
        }
      }
      d.want[at] = static_cast<float>(acc);
      d.scale[at] = std::max(mag, 1e-30);
    }
}

Data make_case(const Case& k, std::mt19937& rng) {
  const PointwiseGeometry& g = k.g;
  std::uniform_real_distribution<float> u(-1, 1);
  Data d;
  d.x.resize(static_cast<size_t>(g.pixels * g.c));
  d.w.resize(static_cast<size_t>(g.oc * g.c));
  d.b.resize(static_cast<size_t>(g.oc));
  d.sum.resize(static_cast<size_t>(g.pixels * g.oc));
  for (auto* v : {&d.x, &d.w, &d.b, &d.sum})
    for (float& f : *v) f = u(rng);
  compute_reference(k, d);
  return d;
}

// The ISA levels whose variant this processor runs.
std::vector<cpu::Isa> runnable_isas() {
  std::vector<cpu::Isa> isas;
  for (const cpu::Isa isa : {cpu::Isa::kAvx2, cpu::Isa::kAvx512})
    if (cpu::detected_isa() >= isa) isas.push_back(isa);
  return isas;
}

TEST(PointwiseConv, MatchesThe1x1ConvolutionInDouble) {
  if (runnable_isas().empty()) GTEST_SKIP() << "the 1x1 kernel needs AVX2 + FMA; this processor has none";
  const Case cases[] = {
      {"24->24 (AVX2's panels of 16 and 8), 53 pixels, SiLU", {53, 24, 24}, true, {{WinoPostKind::kSilu}}},
      {"32->32, 301 pixels, SiLU", {301, 32, 32}, true, {{WinoPostKind::kSilu}}},
      {"3->16, 1 pixel, no bias", {1, 3, 16}, false, {}},
      {"33->48, 49 pixels, sigmoid", {49, 33, 48}, true, {{WinoPostKind::kSigmoid}}},
      {"64->80 (48 + 32), 47 pixels, SiLU then sum", {47, 64, 80}, true, {{WinoPostKind::kSilu}, {WinoPostKind::kSum}}},
      {"192->64, 48 pixels, sum then ReLU", {48, 192, 64}, true, {{WinoPostKind::kSum}, {WinoPostKind::kRelu}}},
      {"16->112, 5 pixels, LeakyRelu", {5, 16, 112}, true, {{WinoPostKind::kLeakyRelu, 0.1f}}},
      {"128->256, 97 pixels, HardSwish", {97, 128, 256}, false, {{WinoPostKind::kHardSwish}}},
      {"80->16, 100 pixels, Clip", {100, 80, 16}, true, {{WinoPostKind::kClip, -0.5f, 0.5f}}},
  };
  std::mt19937 rng(41);
  for (const Case& k : cases)
    for (const cpu::Isa isa : runnable_isas()) {
    const Data d = make_case(k, rng);
    const PointwiseConv conv(k.g, d.w.data(), k.bias ? d.b.data() : nullptr, k.posts, isa);
    EXPECT_STREQ(conv.name(), isa >= cpu::Isa::kAvx512 && k.g.oc % 16 == 0 ? "streamdet:pointwise:avx512" : "streamdet:pointwise:avx2") << k.name;
    for (int threads : {1, 2, 3}) {
      std::vector<float> y(d.want.size(), std::numeric_limits<float>::quiet_NaN());
      conv.run(d.x.data(), y.data(), d.sum.data(), threads);
      double worst = 0;
      size_t worst_at = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        const double err = std::fabs(double{y[i]} - d.want[i]) / d.scale[i];
        if (!(err <= worst)) worst = err, worst_at = i;  // NaN (an output never written) counts as worst
      }
      EXPECT_LT(worst, 1e-6) << k.name << ", " << conv.name() << ", " << threads << " threads: output " << worst_at << " is " << y[worst_at]
                             << ", want " << d.want[worst_at];
    }
    }
}

TEST(PointwiseConv, StridedSourceSumAndDestinationGiveTheDenseResult) {
  if (runnable_isas().empty()) GTEST_SKIP() << "the 1x1 kernel needs AVX2 + FMA; this processor has none";
  const Case cases[] = {
      {"64->80, 61 pixels, SiLU then sum", {61, 64, 80}, true, {{WinoPostKind::kSilu}, {WinoPostKind::kSum}}},
      {"32->32, 150 pixels, SiLU (C2f's cv1 into its Concat)", {150, 32, 32}, true, {{WinoPostKind::kSilu}}},
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::mt19937 rng(7);
  for (const cpu::Isa isa : runnable_isas())
  for (const Case& k : cases) {
    const PointwiseGeometry& g = k.g;
    const Data d = make_case(k, rng);
    const PointwiseConv conv(g, d.w.data(), k.bias ? d.b.data() : nullptr, k.posts, isa);
    // Each a column `at` floats into pixels of `stride` floats.
    const int64_t xs = g.c + 24, xat = 8, ss = g.oc + 16, sat = 16, ys = g.oc + 40, yat = 24;
    std::vector<float> x(static_cast<size_t>(g.pixels * xs), nan), sum(static_cast<size_t>(g.pixels * ss), nan);
    for (int64_t p = 0; p < g.pixels; ++p) {
      std::copy_n(d.x.begin() + p * g.c, g.c, x.begin() + p * xs + xat);
      std::copy_n(d.sum.begin() + p * g.oc, g.oc, sum.begin() + p * ss + sat);
    }
    for (int threads : {1, 2}) {
      std::vector<float> dense(static_cast<size_t>(g.pixels * g.oc)), y(static_cast<size_t>(g.pixels * ys), -7.f);
      conv.run(d.x.data(), dense.data(), d.sum.data(), threads);
      conv.run(x.data() + xat, y.data() + yat, sum.data() + sat, threads, {xs, ys, ss});
      int64_t differ = 0, outside = 0;
      for (int64_t p = 0; p < g.pixels; ++p)
        for (int64_t i = 0; i < ys; ++i) {
          const float v = y[static_cast<size_t>(p * ys + i)];
          if (i < yat || i >= yat + g.oc)
            outside += v != -7.f;
          else
            differ += std::memcmp(&v, &dense[static_cast<size_t>(p * g.oc + i - yat)], sizeof v) != 0;
        }
      EXPECT_EQ(differ, 0) << k.name << ", " << conv.name() << ", " << threads << " threads: outputs unlike the dense run's";
      EXPECT_EQ(outside, 0) << k.name << ", " << conv.name() << ", " << threads << " threads: floats written outside the destination's columns";
    }
  }
}

// The source in parts (a Concat read from its inputs, kSrcParts): each part in a tensor of its own
// at its own pixel stride, one of them upsampled 2x (a nearest Resize read where it stands): the
// bits of the run on the concatenated (and upsampled) source.
TEST(PointwiseConv, SourceInPartsGivesTheBitsOfTheConcatenatedSource) {
  if (runnable_isas().empty()) GTEST_SKIP() << "the 1x1 kernel needs AVX2 + FMA; this processor has none";
  using native::ops::SrcPart;
  const int64_t n = 2, h = 6, w = 10, pixels = n * h * w;  // 120 pixels: blocks of 48 and rows of 6 across images
  const int64_t cs[3] = {24, 8, 16};                       // part 1 upsampled from [n, h/2, w/2]
  const int64_t c = cs[0] + cs[1] + cs[2], oc = 32;
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> wts(static_cast<size_t>(oc * c)), bias(static_cast<size_t>(oc));
  for (auto* v : {&wts, &bias})
    for (float& f : *v) f = u(rng);
  // Part 0 dense, part 1 at half size with a stride of 13, part 2 at a stride of 20.
  const int64_t strides[3] = {cs[0], 13, 20};
  std::vector<float> p0(static_cast<size_t>(pixels * strides[0])), p1(static_cast<size_t>(n * (h / 2) * (w / 2) * strides[1])),
      p2(static_cast<size_t>(pixels * strides[2]));
  for (auto* v : {&p0, &p1, &p2})
    for (float& f : *v) f = u(rng);
  std::vector<float> whole(static_cast<size_t>(pixels * c));
  for (int64_t p = 0; p < pixels; ++p) {
    const int64_t x = p % w, y = p / w % h, b = p / (w * h), low = (b * (h / 2) + y / 2) * (w / 2) + x / 2;
    float* row = whole.data() + p * c;
    std::copy_n(p0.begin() + p * strides[0], cs[0], row);
    std::copy_n(p1.begin() + low * strides[1], cs[1], row + cs[0]);
    std::copy_n(p2.begin() + p * strides[2], cs[2], row + cs[0] + cs[1]);
  }
  for (const cpu::Isa isa : runnable_isas()) {
    const PointwiseConv conv({pixels, c, oc}, wts.data(), bias.data(), {{WinoPostKind::kSilu}}, isa);
    const SrcPart parts[3] = {{p0.data(), cs[0], strides[0]}, {p1.data(), cs[1], strides[1], 2, h, w}, {p2.data(), cs[2], strides[2]}};
    for (int threads : {1, 2}) {
      std::vector<float> want(static_cast<size_t>(pixels * oc)), got(want.size(), -7.f);
      conv.run(whole.data(), want.data(), nullptr, threads);
      conv.run_parts(parts, got.data(), nullptr, threads);
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << conv.name() << ", " << threads << " threads";
    }
  }
}

// float32 to bf16, rounded to nearest even (finite values here), and back.
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The bf16 variant (--precision bf16): its products are those of the bf16-rounded source and
// weights, exact in float32, summed in float32: against the double-precision 1x1 convolution of
// those rounded values, 1e-6 of sum |x * w| as the float32 variant; the bf16 result is that
// float32 result rounded to bf16.
TEST(PointwiseConv, Bf16VariantMatchesThe1x1ConvolutionOfTheRoundedValues) {
  if (cpu::detected_isa() < cpu::Isa::kAvx512Bf16)
    GTEST_SKIP() << "the bf16 variant needs AVX512_BF16; this processor has " << cpu::isa_name(cpu::detected_isa());
  const Case cases[] = {
      {"32->32, 301 pixels, SiLU", {301, 32, 32}, true, {{WinoPostKind::kSilu}}},
      {"64->80 (48 + 32), 47 pixels, SiLU then sum", {47, 64, 80}, true, {{WinoPostKind::kSilu}, {WinoPostKind::kSum}}},
      {"192->64, 49 pixels, no bias", {49, 192, 64}, false, {}},
  };
  std::mt19937 rng(43);
  for (const Case& k : cases) {
    const PointwiseGeometry& g = k.g;
    Data d = make_case(k, rng);
    std::vector<uint16_t> xb(d.x.size());
    for (size_t i = 0; i < d.x.size(); ++i) xb[i] = to_bf16(d.x[i]), d.x[i] = from_bf16(xb[i]);
    for (float& w : d.w) w = from_bf16(to_bf16(w));
    compute_reference(k, d);  // of the rounded values
    const std::vector<float>& w_rounded = d.w;
    const std::vector<float>& b = d.b;
    const std::vector<float>& sum = d.sum;
    const Data& ref = d;
    const PointwiseConv conv(g, w_rounded.data(), k.bias ? b.data() : nullptr, k.posts, cpu::detected_isa(), /*bf16=*/true);
    ASSERT_TRUE(conv.bf16()) << k.name;
    EXPECT_STREQ(conv.name(), "streamdet:pointwise:avx512_bf16");
    for (int threads : {1, 2}) {
      std::vector<float> y(ref.want.size(), std::numeric_limits<float>::quiet_NaN());
      std::vector<uint16_t> yb(ref.want.size(), 0xffff);
      conv.run_bf16(xb.data(), y.data(), nullptr, sum.data(), threads);
      conv.run_bf16(xb.data(), nullptr, yb.data(), sum.data(), threads);
      double worst = 0;
      int64_t unlike = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        const double err = std::fabs(double{y[i]} - ref.want[i]) / ref.scale[i];
        if (!(err <= worst)) worst = err;
        unlike += yb[i] != to_bf16(y[i]);
      }
      EXPECT_LT(worst, 1e-6) << k.name << ", " << threads << " threads";
      EXPECT_EQ(unlike, 0) << k.name << ", " << threads << " threads: the bf16 result is not the float32 one rounded";
    }
  }
}

TEST(PointwiseConv, TakesOnly1x1Stride1ShapesFromAvx2Up) {
  using cpu::Isa;
  EXPECT_TRUE(PointwiseConv::applies(32, 32, 1, 1, 1, 1, 1, 0, 0, 0, 0, Isa::kAvx512));
  EXPECT_TRUE(PointwiseConv::applies(3, 16, 1, 1, 1, 1, 1, 0, 0, 0, 0, Isa::kAvx512Vnni));
  EXPECT_TRUE(PointwiseConv::applies(32, 24, 1, 1, 1, 1, 1, 0, 0, 0, 0, Isa::kAvx2));
  EXPECT_FALSE(PointwiseConv::applies(32, 32, 1, 1, 1, 1, 1, 0, 0, 0, 0, Isa::kBaseline)) << "no AVX2";
  EXPECT_FALSE(PointwiseConv::applies(32, 20, 1, 1, 1, 1, 1, 0, 0, 0, 0, Isa::kAvx512)) << "output channels not a multiple of 8";
  EXPECT_FALSE(PointwiseConv::applies(32, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, Isa::kAvx512)) << "3x3";
  EXPECT_FALSE(PointwiseConv::applies(32, 32, 1, 1, 2, 2, 1, 0, 0, 0, 0, Isa::kAvx512)) << "stride 2";
  EXPECT_FALSE(PointwiseConv::applies(32, 32, 1, 1, 1, 1, 2, 0, 0, 0, 0, Isa::kAvx512)) << "grouped";
  EXPECT_FALSE(PointwiseConv::applies(32, 32, 1, 1, 1, 1, 1, 1, 1, 1, 1, Isa::kAvx512)) << "padded";
}

}  // namespace
}  // namespace sd
