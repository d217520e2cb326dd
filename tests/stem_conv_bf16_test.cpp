// The bf16 stem (engine/native/cpu/stem_conv_bf16.h) against the definition of the convolution on
// the same bf16-rounded inputs and weights (stem_reference.h): what it computes is exactly that, up
// to float32 sums in another order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/bf16_convert.h"
#include "engine/native/cpu/stem_conv_bf16.h"
#include "stem_reference.h"

namespace sd::native::ops {
namespace {

// The operands as the kernel multiplies them.
std::vector<float> rounded(std::vector<float> v) {
  for (float& f : v) f = bf16_to_float(float_to_bf16_rne(f));
  return v;
}

TEST(StemConvBf16, MatchesTheDefinitionOnBf16Operands) {
  if (!StemConvBf16::applies({1, 3, 8, 8, 16, 3, 3, 4, 4, 2, 2, 1, 1}, false, {})) GTEST_SKIP() << "this processor has no AVX512_BF16";
  auto geo = [](int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc, int64_t pad_bottom_right) {
    return StemConvGeometry{n, c, h, w, oc, 3, 3, (h + 1 + pad_bottom_right - 3) / 2 + 1, (w + 1 + pad_bottom_right - 3) / 2 + 1, 2, 2, 1, 1};
  };
  struct Case {
    const char* name;
    StemConvGeometry g;
    bool silu;
  };
  const Case cases[] = {
      {"YOLOv8's 3->16, odd sides", geo(1, 3, 37, 45, 16, 1), true},
      {"3->16, rows of fewer than 12 columns", geo(1, 3, 9, 17, 16, 1), false},
      {"two images, 3->32, even sides", geo(2, 3, 20, 66, 32, 1), true},
      {"3->24 (FastestDet: the last block half full), no bottom-right padding", geo(1, 3, 23, 50, 24, 0), true},
      {"3->8 (the bundled tiny model)", geo(1, 3, 16, 64, 8, 1), true},
      {"1->16, a grey image", geo(1, 1, 15, 31, 16, 1), false},
      {"4->48", geo(1, 4, 13, 40, 48, 1), false},
  };
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const Case& k : cases) {
    const StemConvGeometry& g = k.g;
    ASSERT_TRUE(StemConvBf16::applies(g, false, {})) << k.name;
    std::vector<float> x(static_cast<size_t>(g.n * g.c * g.h * g.w)), w(static_cast<size_t>(g.oc * g.c * 9)), b(static_cast<size_t>(g.oc));
    for (auto* v : {&x, &w, &b})
      for (float& f : *v) f = u(rng);
    const std::vector<WinoPost> posts = k.silu ? std::vector<WinoPost>{{WinoPostKind::kSilu}} : std::vector<WinoPost>{};
    const StemConvBf16 conv(g, w.data(), b.data(), posts);
    auto want = test::reference_stem_conv(g, rounded(x), false, rounded(w), b);
    if (k.silu)
      for (float& v : want) v = static_cast<float>(v / (1 + std::exp(-double{v})));
    for (int threads : {1, 3}) {
      std::vector<float> y(want.size(), std::numeric_limits<float>::quiet_NaN());
      conv.run(x.data(), y.data(), nullptr, threads);
      double worst = 0;
      for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, double{std::fabs(y[i] - want[i])});  // NaN (unwritten) fails below
      EXPECT_LT(worst, 2e-5) << k.name << ", " << threads << " threads, float32 result";
      EXPECT_EQ(std::count_if(y.begin(), y.end(), [](float f) { return std::isnan(f); }), 0) << k.name << ": every output written";
      // The bf16 result: the float32 one rounded as vcvtneps2bf16 rounds.
      std::vector<uint16_t> yb(want.size(), 0xffff);
      conv.run(x.data(), nullptr, yb.data(), threads);
      size_t off = 0;
      for (size_t i = 0; i < want.size(); ++i) off += yb[i] != float_to_bf16_rne(y[i]);
      EXPECT_EQ(off, 0u) << k.name << ", " << threads << " threads, bf16 result";
    }
  }
}

TEST(StemConvBf16, TakesOnlyTheLayersItIsFor) {
  const StemConvGeometry yolov8{1, 3, 640, 640, 16, 3, 3, 320, 320, 2, 2, 1, 1};
  for (cpu::Isa isa : {cpu::Isa::kAvx2, cpu::Isa::kAvx512, cpu::Isa::kAvx512Vnni})
    EXPECT_FALSE(StemConvBf16::applies(yolov8, false, {}, isa)) << cpu::isa_name(isa) << ": no vdpbf16ps";
  const cpu::Isa bf16 = cpu::Isa::kAvx512Bf16;
#if defined(__x86_64__)
  EXPECT_TRUE(StemConvBf16::applies(yolov8, false, {{WinoPostKind::kSilu}}, bf16));
#endif
  EXPECT_FALSE(StemConvBf16::applies(yolov8, true, {}, bf16)) << "a channels-last source";
  EXPECT_FALSE(StemConvBf16::applies(yolov8, false, {{WinoPostKind::kSum}}, bf16)) << "a residual sum";
  auto with = [&](auto change) {
    StemConvGeometry g = yolov8;
    change(g);
    return StemConvBf16::applies(g, false, {}, bf16);
  };
  EXPECT_FALSE(with([](StemConvGeometry& g) { g.sw = g.sh = 1; })) << "stride 1";
  EXPECT_FALSE(with([](StemConvGeometry& g) { g.kw = g.kh = 6; })) << "YOLOv5's 6x6";
  EXPECT_FALSE(with([](StemConvGeometry& g) { g.pl = 2; })) << "other left padding";
  EXPECT_FALSE(with([](StemConvGeometry& g) { g.c = 12; })) << "a Focus layer's 12 channels";
  EXPECT_FALSE(with([](StemConvGeometry& g) { g.oc = 4; })) << "fewer than 8 outputs";
}

}  // namespace
}  // namespace sd::native::ops
