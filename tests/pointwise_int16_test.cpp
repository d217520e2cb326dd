// The int8 convolution as a GEMM in 16-bit integers (cpu/pointwise_int16.h) against the
// convolution of the bytes computed exactly in 64-bit integers, then scaled as the kernel scales
// (x_scale * w_scale + bias) in double: 1x1 layers (rows read as they are) and other windows (3x3
// stride 2 as YOLOv8n's, 3x3 stride 1, 1x3 and 5x5 dilated with uneven padding: rows of taps
// gathered), output pixel counts that are not multiples of the kernel's 6-pixel rows or its blocks,
// 16 to 512 channels, uint8 and int8 sources with zero points at both ends of their range,
// full-range weights (-128 included), per-tensor and per-channel scales, 1 and 3 threads; and the
// quantized output against the float one quantized afterwards.
//
// Tolerance: the integer sums are exact (each product at most 32640, so no int32 overflow below
// 65536 of them); the result's error is the float32 rounding of the sum, the scale and the bias:
// a few 2^-24 of sum |(x - zero point) * w| * scales. Bound 1e-6 of it; a wrong tap, channel,
// pair, padding or zero point gives errors of order 0.1 to 1 of it.
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

// A kh x kw window at stride s, dilation d, padding top/left pt, pl and bottom/right pb, pr.
ConvGeometry window(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc, int64_t kh, int64_t kw, int64_t s, int64_t d, int64_t pt,
                    int64_t pl, int64_t pb, int64_t pr) {
  const int64_t oh = (h + pt + pb - d * (kh - 1) - 1) / s + 1, ow = (w + pl + pr - d * (kw - 1) - 1) / s + 1;
  return ConvGeometry{n, c, h, w, oc, kh, kw, oh, ow, 1, s, s, d, d, pt, pl, pb, pr};
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
  d.w.resize(static_cast<size_t>(g.oc * g.c * g.kh * g.kw));
  for (auto& v : d.w) v = static_cast<int8_t>(weight(rng));
  d.w_scales.resize(per_channel ? static_cast<size_t>(g.oc) : 1);
  for (auto& v : d.w_scales) v = scale(rng);
  d.bias.resize(static_cast<size_t>(g.oc));
  for (auto& v : d.bias) v = bias(rng);
  return d;
}

bool no_avx2() { return cpu::detected_isa() < cpu::Isa::kAvx2; }

TEST(PointwiseInt16, MatchesTheExactConvolutionOnRandomBytes) {
  if (no_avx2()) GTEST_SKIP() << "the int16 GEMM kernel needs AVX2; this processor has " << cpu::isa_name(cpu::detected_isa());
  std::mt19937 rng(17);
  const ConvGeometry shapes[] = {geometry(1, 16, 1, 1, 16),
                                 geometry(1, 32, 7, 9, 48),
                                 geometry(2, 64, 5, 11, 16),
                                 geometry(1, 512, 4, 13, 32),
                                 geometry(1, 16, 20, 20, 128),
                                 window(1, 32, 13, 10, 48, 3, 3, 2, 1, 1, 1, 1, 1),   // YOLOv8n's downsampling layers
                                 window(2, 16, 8, 8, 32, 3, 3, 2, 1, 1, 1, 1, 1),
                                 window(1, 16, 9, 7, 16, 3, 3, 1, 1, 1, 1, 1, 1),
                                 window(1, 48, 6, 9, 16, 1, 3, 1, 1, 0, 2, 0, 0),
                                 window(1, 16, 12, 11, 32, 5, 5, 1, 2, 3, 1, 2, 4)};
  const std::pair<bool, int32_t> sources[] = {{false, 0}, {false, 255}, {true, -128}, {true, 127}};
  int index = 0;
  for (const ConvGeometry& g : shapes)
    for (const auto& [x_signed, zp] : sources) {
      const Data d = random_data(g, index % 2 == 0, rng);
      const float xs = 0.02f;
      const Int16Pointwise conv(g, d.w.data(), d.w_scales, d.bias.data(), xs, zp, x_signed);
      const int threads = 1 + 2 * (index % 2);
      const int64_t pixels = g.n * g.oh * g.ow;
      std::vector<float> y(static_cast<size_t>(pixels * g.oc), std::numeric_limits<float>::quiet_NaN());
      conv.run(d.x.data(), y.data(), threads);
      const std::string what = std::string(conv.name()) + " " + std::to_string(g.kh) + "x" + std::to_string(g.kw) + " stride " +
                               std::to_string(g.sh) + ", " + std::to_string(pixels) + " pixels, " + std::to_string(g.c) + "->" +
                               std::to_string(g.oc) + (x_signed ? " int8" : " uint8") + " zero point " + std::to_string(zp) + ", " +
                               std::to_string(threads) + " threads";
      int failures = 0;
      for (int64_t p = 0; p < pixels && failures < 3; ++p)
        for (int64_t o = 0; o < g.oc && failures < 3; ++o) {
          const int64_t img = p / (g.oh * g.ow), oy = p % (g.oh * g.ow) / g.ow, ox = p % g.ow;
          int64_t acc = 0, mag = 0;
          for (int64_t ky = 0; ky < g.kh; ++ky)
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const int64_t iy = oy * g.sh - g.pt + ky * g.dh, ix = ox * g.sw - g.pl + kx * g.dw;
              if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
              for (int64_t c = 0; c < g.c; ++c) {
                const uint8_t b = d.x[static_cast<size_t>(((img * g.h + iy) * g.w + ix) * g.c + c)];
                const int64_t v = (x_signed ? static_cast<int64_t>(static_cast<int8_t>(b)) : static_cast<int64_t>(b)) - zp;
                const int64_t prod = v * d.w[static_cast<size_t>(((o * g.c + c) * g.kh + ky) * g.kw + kx)];
                acc += prod, mag += prod < 0 ? -prod : prod;
              }
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
  std::vector<uint8_t> table(256);
  for (size_t b = 0; b < 256; ++b) table[b] = static_cast<uint8_t>((b * 5 + 1) % 256);
  const q8::QuantizeFn quantize = q8::quantize_kernel(cpu::active_isa());
  for (const bool is_signed : {false, true})
    for (const uint8_t* t : {static_cast<const uint8_t*>(nullptr), static_cast<const uint8_t*>(table.data())}) {
      const q8::Quantization yq{0.1f, is_signed ? 2 : 90, is_signed};
      std::vector<uint8_t> want(n), got(n, 0xCD);
      quantize(y.data(), static_cast<int64_t>(n), yq, t, want.data());
      conv.run_quantized(d.x.data(), got.data(), yq, t, quantize, 3);
      EXPECT_EQ(got, want) << (is_signed ? "int8" : "uint8") << (t ? " with a table" : "");
    }
}

TEST(PointwiseInt16, TakesOnlyItsShapes) {
  EXPECT_TRUE(Int16Pointwise::applies(geometry(1, 16, 8, 8, 16)));
  EXPECT_TRUE(Int16Pointwise::applies(window(1, 16, 8, 8, 16, 3, 3, 2, 1, 1, 1, 1, 1)));
  // The micro-kernel's AVX-VNNI form where the processor has it and the level allows (the test
  // runs capped at avx2 and avx2_vnni too: tests/cpu_isa_runs.cmake).
  const std::string isa = cpu::avx_vnni_active() ? "avx2_vnni" : "avx2";
  EXPECT_EQ(Int16Pointwise(geometry(1, 16, 2, 2, 16), std::vector<int8_t>(256).data(), {1.f}, nullptr, 1.f, 0, false).name(),
            "streamdet:pointwise16:" + isa);
  EXPECT_EQ(Int16Pointwise(window(1, 16, 2, 2, 16, 3, 3, 2, 1, 1, 1, 1, 1), std::vector<int8_t>(16 * 16 * 9).data(), {1.f}, nullptr, 1.f, 0,
                           false)
                .name(),
            "streamdet:gemm16:" + isa);
  EXPECT_FALSE(Int16Pointwise::applies(geometry(1, 24, 8, 8, 16)));  // channels not a multiple of 16
  EXPECT_FALSE(Int16Pointwise::applies(geometry(1, 16, 8, 8, 40)));  // output channels likewise
  ConvGeometry grouped = window(1, 32, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1);
  grouped.group = 2;
  EXPECT_FALSE(Int16Pointwise::applies(grouped));
  EXPECT_FALSE(Int16Pointwise::applies(window(1, 4096, 8, 8, 16, 5, 5, 1, 1, 2, 2, 2, 2)));  // rows of more than 65536 taps
}

}  // namespace
}  // namespace sd
