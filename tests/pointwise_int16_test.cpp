// The int8 1x1 convolution as a GEMM in 16-bit integers (cpu/pointwise_int16.h) against the
// convolution of the bytes computed exactly in 64-bit integers, then scaled as the kernel scales
// (x_scale * w_scale + bias) in double: pixel counts that are not multiples of the kernel's 6-pixel
// rows or 48-pixel blocks, 16 to 512 channels, uint8 and int8 sources with zero points at both ends
// of their range, full-range weights (-128 included), per-tensor and per-channel scales, 1 and 3
// threads; and the quantized output against the float one quantized afterwards.
//
// Tolerance: the integer sums are exact (at most 65280 a channel pair, so no int32 overflow below
// 32768 channels); the result's error is the float32 rounding of the sum, the scale and the bias:
// a few 2^-24 of sum |(x - zero point) * w| * scales. Bound 1e-6 of it; a wrong channel, pair or
// zero point gives errors of order 0.1 to 1 of it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/int8_float_convert.h"
#include "engine/native/cpu/pointwise_int16.h"

namespace sd {
namespace {

using native::ops::ConvGeometry;
using native::ops::Int16Pointwise;

ConvGeometry geometry(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc) {
  return ConvGeometry{n, c, h, w, oc, 1, 1, h, w, 1, 1, 1, 1, 1, 0, 0, 0, 0};
}

struct Data {
  std::vector<uint8_t> x;
  std::vector<int8_t> w;
  std::vector<float> w_scales, bias;
};

Data random_data(const ConvGeometry& g, bool per_channel, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255), weight(-128, 127);
  std::uniform_real_distribution<float> scale(0.001f, 0.01f), bias(-1.f, 1.f);
  Data d;
  d.x.resize(static_cast<size_t>(g.n * g.h * g.w * g.c));
  for (auto& v : d.x) v = static_cast<uint8_t>(byte(rng));
  d.w.resize(static_cast<size_t>(g.oc * g.c));
  for (auto& v : d.w) v = static_cast<int8_t>(weight(rng));
  d.w_scales.resize(per_channel ? static_cast<size_t>(g.oc) : 1);
  for (auto& v : d.w_scales) v = scale(rng);
  d.bias.resize(static_cast<size_t>(g.oc));
  for (auto& v : d.bias) v = bias(rng);
  return d;
}

bool no_avx2() { return cpu::detected_isa() < cpu::Isa::kAvx2; }

TEST(PointwiseInt16, MatchesTheExactConvolutionOnRandomBytes) {
  if (no_avx2()) GTEST_SKIP() << "the int16 1x1 kernel needs AVX2; this processor has " << cpu::isa_name(cpu::detected_isa());
  std::mt19937 rng(17);
  struct Shape {
    int64_t n, c, h, w, oc;
  };
  const Shape shapes[] = {{1, 16, 1, 1, 16}, {1, 32, 7, 9, 48}, {2, 64, 5, 11, 16}, {1, 512, 4, 13, 32}, {1, 16, 20, 20, 128}};
  const std::pair<bool, int32_t> sources[] = {{false, 0}, {false, 255}, {true, -128}, {true, 127}};
  int index = 0;
  for (const Shape& s : shapes)
    for (const auto& [x_signed, zp] : sources) {
      const ConvGeometry g = geometry(s.n, s.c, s.h, s.w, s.oc);
      const Data d = random_data(g, index % 2 == 0, rng);
      const float xs = 0.02f;
      const Int16Pointwise conv(g, d.w.data(), d.w_scales, d.bias.data(), xs, zp, x_signed);
      const int threads = 1 + 2 * (index % 2);
      const int64_t pixels = g.n * g.h * g.w;
      std::vector<float> y(static_cast<size_t>(pixels * g.oc), std::numeric_limits<float>::quiet_NaN());
      conv.run(d.x.data(), y.data(), threads);
      const std::string what = std::to_string(pixels) + " pixels, " + std::to_string(s.c) + "->" + std::to_string(s.oc) +
                               (x_signed ? " int8" : " uint8") + " zero point " + std::to_string(zp) + ", " + std::to_string(threads) + " threads";
      int failures = 0;
      for (int64_t p = 0; p < pixels && failures < 3; ++p)
        for (int64_t o = 0; o < g.oc && failures < 3; ++o) {
          int64_t acc = 0, mag = 0;
          for (int64_t c = 0; c < g.c; ++c) {
            const uint8_t b = d.x[static_cast<size_t>(p * g.c + c)];
            const int64_t v = (x_signed ? static_cast<int64_t>(static_cast<int8_t>(b)) : static_cast<int64_t>(b)) - zp;
            const int64_t prod = v * d.w[static_cast<size_t>(o * g.c + c)];
            acc += prod, mag += prod < 0 ? -prod : prod;
          }
          const double sc = double{xs} * d.w_scales[d.w_scales.size() == 1 ? 0 : static_cast<size_t>(o)], b = d.bias[static_cast<size_t>(o)];
          const double want = static_cast<double>(acc) * sc + b, tol = 1e-6 * (static_cast<double>(mag) * sc + std::fabs(b)) + 1e-7;
          const float got = y[static_cast<size_t>(p * g.oc + o)];
          if (!(std::fabs(got - want) <= tol)) {
            ADD_FAILURE() << what << ": pixel " << p << " channel " << o << " is " << got << ", want " << want;
            ++failures;
          }
        }
      ++index;
    }
}

// Quantized as it is computed (with and without a table, uint8 and int8 bytes): the bytes of the
// float result quantized afterwards, 53 pixels (a short last block and a short last row of 6).
TEST(PointwiseInt16, QuantizedOutputsGiveTheBytesOfTheQuantizedResult) {
  if (no_avx2()) GTEST_SKIP() << "the int16 1x1 kernel needs AVX2; this processor has " << cpu::isa_name(cpu::detected_isa());
  namespace q8 = native::ops::int8_float;
  std::mt19937 rng(5);
  const ConvGeometry g = geometry(1, 48, 1, 53, 32);
  const Data d = random_data(g, true, rng);
  const Int16Pointwise conv(g, d.w.data(), d.w_scales, d.bias.data(), 0.02f, 17, false);
  const size_t n = static_cast<size_t>(53 * g.oc);
  std::vector<float> y(n);
  conv.run(d.x.data(), y.data(), 2);
  std::vector<int32_t> table(256);
  for (size_t b = 0; b < 256; ++b) table[b] = static_cast<int32_t>((b * 5 + 1) % 256);
  const q8::QuantizeFn quantize = q8::quantize_kernel(cpu::active_isa());
  for (const bool is_signed : {false, true})
    for (const int32_t* t : {static_cast<const int32_t*>(nullptr), static_cast<const int32_t*>(table.data())}) {
      const q8::Quantization yq{0.1f, is_signed ? 2 : 90, is_signed};
      std::vector<uint8_t> want(n), got(n, 0xCD);
      quantize(y.data(), static_cast<int64_t>(n), yq, t, want.data());
      conv.run_quantized(d.x.data(), got.data(), yq, t, quantize, 3);
      EXPECT_EQ(got, want) << (is_signed ? "int8" : "uint8") << (t ? " with a table" : "");
    }
}

TEST(PointwiseInt16, TakesOnlyItsShapes) {
  EXPECT_TRUE(Int16Pointwise::applies(geometry(1, 16, 8, 8, 16)));
  EXPECT_FALSE(Int16Pointwise::applies(geometry(1, 24, 8, 8, 16)));  // channels not a multiple of 16
  EXPECT_FALSE(Int16Pointwise::applies(geometry(1, 16, 8, 8, 40)));  // output channels likewise
  ConvGeometry strided = geometry(1, 16, 8, 8, 16);
  strided.sh = strided.sw = 2, strided.oh = strided.ow = 4;
  EXPECT_FALSE(Int16Pointwise::applies(strided));
  ConvGeometry padded = geometry(1, 16, 8, 8, 16);
  padded.pt = padded.pl = padded.pb = padded.pr = 1, padded.oh = padded.ow = 10;
  EXPECT_FALSE(Int16Pointwise::applies(padded));
}

}  // namespace
}  // namespace sd
