// The int8 convolution as Winograd F(4x4, 3x3) in 16-bit integers (cpu/winograd_int16.h) against
// the convolution of the bytes computed exactly in 64-bit integers, then scaled as the kernel
// scales (x_scale * w_scale + bias) in double: sizes that are not multiples of the 4x4 tile,
// images smaller than a tile, 16 to 256 channels, uint8 and int8 sources with zero points at both
// ends of their range, per-tensor and per-channel weight scales, 1 and 3 threads.
//
// Tolerance: the integer sums are exact, so the error is float32's after them: each chunk's int32
// sum rounded to float32 (2^-24 of it), times the scale, and the output transform's additions
// (A^T's coefficients up to 8 on each side): about 1e-6 of sum |x * w| at worst, as for the float
// Winograd. Bound 1e-5 of sum |(x - zero point) * w| * scales (winograd_conv_test.cpp's); a wrong
// tap, transform coefficient, zero point or channel pair gives errors of order 0.1 to 1 of it.
//
// The worst case for the int32 sums: weights and a source that make |U'| and |V| as large as they
// get (a checkerboard of 0 and 255 against weights of +-127 and -128): there the kernel must sum
// the channels in chunks, and still be right.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/int8_float_convert.h"
#include "engine/native/cpu/winograd_int16.h"

namespace sd {
namespace {

using native::ops::ConvGeometry;
using native::ops::Int16Winograd;

ConvGeometry geometry(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc) {
  return ConvGeometry{n, c, h, w, oc, 3, 3, h, w, 1, 1, 1, 1, 1, 1, 1, 1, 1};
}

struct Case {
  ConvGeometry g;
  std::vector<uint8_t> x;
  std::vector<int8_t> w;
  std::vector<float> w_scales, bias;
  float x_scale = 0.02f;
  int32_t x_zero = 0;
  bool x_signed = false;
};

// Checks the kernel's result against the exact convolution; returns the worst relative error.
double expect_exact_within_float(const Case& k, int threads, const char* what) {
  const ConvGeometry& g = k.g;
  const Int16Winograd conv(g, k.w.data(), k.w_scales, k.bias.empty() ? nullptr : k.bias.data(), k.x_scale, k.x_zero, k.x_signed);
  std::vector<float> y(static_cast<size_t>(g.n * g.h * g.w * g.oc), std::numeric_limits<float>::quiet_NaN());
  conv.run(k.x.data(), y.data(), threads);
  const auto value = [&](size_t i) { return k.x_signed ? static_cast<int64_t>(static_cast<int8_t>(k.x[i])) : static_cast<int64_t>(k.x[i]); };
  double worst = 0;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oy = 0; oy < g.h; ++oy)
      for (int64_t ox = 0; ox < g.w; ++ox)
        for (int64_t o = 0; o < g.oc; ++o) {
          int64_t acc = 0, mag = 0;
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 3; ++kx) {
              const int64_t iy = oy - 1 + ky, ix = ox - 1 + kx;
              if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
              for (int64_t c = 0; c < g.c; ++c) {
                const int64_t p = (value(static_cast<size_t>(((n * g.h + iy) * g.w + ix) * g.c + c)) - k.x_zero) *
                                  k.w[static_cast<size_t>(((o * g.c + c) * 3 + ky) * 3 + kx)];
                acc += p, mag += p < 0 ? -p : p;
              }
            }
          const double s = double{k.x_scale} * k.w_scales[k.w_scales.size() == 1 ? 0 : static_cast<size_t>(o)];
          const double b = k.bias.empty() ? 0.0 : k.bias[static_cast<size_t>(o)];
          const double want = static_cast<double>(acc) * s + b, scale = static_cast<double>(mag) * s + std::fabs(b) + 1e-30;
          const size_t at = static_cast<size_t>(((n * g.h + oy) * g.w + ox) * g.oc + o);
          const double err = std::fabs(double{y[at]} - want) / scale;
          if (!(err <= worst)) worst = err;  // NaN (an output never written) counts as worst
          EXPECT_LT(err, 1e-5) << what << ", " << threads << " threads: output " << at << " is " << y[at] << ", want " << want;
          if (err >= 1e-5) return worst;  // one failure tells; the rest would repeat it
        }
  return worst;
}

Case random_case(const ConvGeometry& g, bool x_signed, int32_t x_zero, bool per_channel, std::mt19937& rng) {
  Case k;
  k.g = g;
  k.x_signed = x_signed;
  k.x_zero = x_zero;
  std::uniform_int_distribution<int> byte(0, 255), weight(-128, 127);
  std::uniform_real_distribution<float> scale(0.001f, 0.01f), bias(-1.f, 1.f);
  k.x.resize(static_cast<size_t>(g.n * g.h * g.w * g.c));
  for (auto& v : k.x) v = static_cast<uint8_t>(byte(rng));
  k.w.resize(static_cast<size_t>(g.oc * g.c * 9));
  for (auto& v : k.w) v = static_cast<int8_t>(weight(rng));
  k.w_scales.resize(per_channel ? static_cast<size_t>(g.oc) : 1);
  for (auto& v : k.w_scales) v = scale(rng);
  k.bias.resize(static_cast<size_t>(g.oc));
  for (auto& v : k.bias) v = bias(rng);
  return k;
}

bool skip_without_avx2() { return cpu::detected_isa() < cpu::Isa::kAvx2; }

TEST(WinogradInt16, MatchesTheExactConvolutionOnRandomBytes) {
  if (skip_without_avx2()) GTEST_SKIP() << "the int16 Winograd kernel needs AVX2; this processor has " << cpu::isa_name(cpu::detected_isa());
  std::mt19937 rng(11);
  struct Shape {
    int64_t n, c, h, w, oc;
  };
  const Shape shapes[] = {{1, 16, 8, 8, 16}, {1, 32, 13, 7, 48}, {2, 16, 5, 9, 32}, {1, 64, 3, 2, 16}, {1, 80, 20, 20, 80}, {1, 16, 1, 1, 16}};
  // uint8 sources with zero points 0, 128, 255; int8 with -128, 0, 127.
  const std::pair<bool, int32_t> sources[] = {{false, 0}, {false, 128}, {false, 255}, {true, -128}, {true, 0}, {true, 127}};
  int index = 0;
  for (const Shape& s : shapes)
    for (const auto& [x_signed, zp] : sources) {
      const Case k = random_case(geometry(s.n, s.c, s.h, s.w, s.oc), x_signed, zp, index % 2 == 0, rng);
      const std::string what = std::to_string(s.n) + "x" + std::to_string(s.c) + "x" + std::to_string(s.h) + "x" + std::to_string(s.w) + "->" +
                               std::to_string(s.oc) + (x_signed ? " int8" : " uint8") + " zero point " + std::to_string(zp);
      expect_exact_within_float(k, 1 + 2 * (index % 2), what.c_str());
      ++index;
    }
}

// |U'| and |V| as large as they get: a 0/255 checkerboard (zero point 0) against weights whose
// transform reaches its largest magnitudes, on 256 channels. The int32 sums would overflow without
// chunks; the kernel takes fewer channels a chunk and the result stays exact within float32.
TEST(WinogradInt16, WorstCaseSumsAreTakenInChunksAndStayRight) {
  if (skip_without_avx2()) GTEST_SKIP() << "the int16 Winograd kernel needs AVX2; this processor has " << cpu::isa_name(cpu::detected_isa());
  const ConvGeometry g = geometry(1, 256, 8, 8, 16);
  Case k;
  k.g = g;
  k.x.resize(static_cast<size_t>(g.h * g.w * g.c));
  for (int64_t y = 0; y < g.h; ++y)
    for (int64_t x = 0; x < g.w; ++x)
      for (int64_t c = 0; c < g.c; ++c) k.x[static_cast<size_t>((y * g.w + x) * g.c + c)] = (x + y) % 2 ? 255 : 0;
  k.w.resize(static_cast<size_t>(g.oc * g.c * 9));
  for (size_t i = 0; i < k.w.size(); ++i) k.w[i] = static_cast<int8_t>(i % 9 == 4 ? 127 : -128);
  k.w_scales = {0.001f};
  const Int16Winograd conv(g, k.w.data(), k.w_scales, nullptr, k.x_scale, 0, false);
  EXPECT_LT(conv.chunk_channels(), g.c);
  EXPECT_GE(conv.chunk_channels(), 2);
  expect_exact_within_float(k, 2, "worst case");
  // Small weights, as trained layers have them: all 256 channels in one int32 sum.
  for (auto& v : k.w) v = static_cast<int8_t>(v / 64);
  EXPECT_EQ(Int16Winograd(g, k.w.data(), k.w_scales, nullptr, k.x_scale, 0, false).chunk_channels(), g.c);
}

// Quantized as it is computed (run_quantized: each tile's rows through the quantization, with and
// without a table, into uint8 or int8 bytes) gives the bytes of run()'s floats quantized afterwards:
// the same floats, at the picture's edges too (7x10: tiles cut in both directions).
TEST(WinogradInt16, QuantizedTilesGiveTheBytesOfTheQuantizedResult) {
  if (skip_without_avx2()) GTEST_SKIP() << "the int16 Winograd kernel needs AVX2; this processor has " << cpu::isa_name(cpu::detected_isa());
  namespace q8 = native::ops::int8_float;
  std::mt19937 rng(3);
  const Case k = random_case(geometry(2, 32, 7, 10, 48), false, 9, true, rng);
  const Int16Winograd conv(k.g, k.w.data(), k.w_scales, k.bias.data(), k.x_scale, k.x_zero, k.x_signed);
  const size_t n = static_cast<size_t>(k.g.n * k.g.h * k.g.w * k.g.oc);
  std::vector<float> y(n);
  conv.run(k.x.data(), y.data(), 2);
  std::vector<uint8_t> table(256);
  for (size_t b = 0; b < 256; ++b) table[b] = static_cast<uint8_t>((b * 7 + 3) % 256);
  const q8::QuantizeFn quantize = q8::quantize_kernel(cpu::active_isa());
  for (const bool is_signed : {false, true})
    for (const uint8_t* t : {static_cast<const uint8_t*>(nullptr), static_cast<const uint8_t*>(table.data())}) {
      const q8::Quantization yq{0.05f, is_signed ? -4 : 100, is_signed};
      std::vector<uint8_t> want(n), got(n, 0xAB);
      quantize(y.data(), static_cast<int64_t>(n), yq, t, want.data());
      conv.run_quantized(k.x.data(), got.data(), yq, t, quantize, 3);
      EXPECT_EQ(got, want) << (is_signed ? "int8" : "uint8") << (t ? " with a table" : "");
    }
}

TEST(WinogradInt16, TakesOnlyItsShapes) {
  EXPECT_TRUE(Int16Winograd::applies(geometry(1, 16, 8, 8, 16)));
  EXPECT_FALSE(Int16Winograd::applies(geometry(1, 8, 8, 8, 16)));   // channels not a multiple of 16
  EXPECT_FALSE(Int16Winograd::applies(geometry(1, 16, 8, 8, 24)));  // output channels likewise
  ConvGeometry strided = geometry(1, 16, 8, 8, 16);
  strided.sh = strided.sw = 2, strided.oh = strided.ow = 4;
  EXPECT_FALSE(Int16Winograd::applies(strided));
  ConvGeometry grouped = geometry(1, 16, 8, 8, 16);
  grouped.group = 2;
  EXPECT_FALSE(Int16Winograd::applies(grouped));
}

}  // namespace
}  // namespace sd
