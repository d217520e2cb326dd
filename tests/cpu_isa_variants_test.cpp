// Every ISA variant of our own CPU kernels (src/core/cpu_isa.h) against a plain reference, each
// variant called explicitly: the baseline, AVX2 and AVX-512 ones this processor can run (the
// others are skipped, with a message saying so). The binary runs the same variants whatever the
// machine it was built on, so a variant left untested here would first run on a user's machine.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/activation_kernels.h"
#include "engine/native/cpu/bin_expectation_kernel.h"
#include "engine/native/cpu/stem_conv.h"
#include "stem_reference.h"
#include "postprocess/score_scan.h"

namespace sd {
namespace {

using cpu::Isa;
using native::ops::StemActivation;
using native::ops::StemConv;
using native::ops::StemConvGeometry;

class IsaVariant : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (GetParam() > cpu::detected_isa())
      GTEST_SKIP() << "this processor runs up to " << cpu::isa_name(cpu::detected_isa()) << ", not " << cpu::isa_name(GetParam());
  }
};

std::string isa_param_name(const ::testing::TestParamInfo<Isa>& info) {
  switch (info.param) {
    case Isa::kBaseline: return "Baseline";
    case Isa::kAvx2: return "Avx2";
    case Isa::kAvx512: return "Avx512";
    case Isa::kAvx512Vnni: return "Avx512Vnni";
    case Isa::kAvx512Bf16: return "Avx512Bf16";
  }
  return "Unknown";
}

struct StemCase {
  const char* name;
  StemConvGeometry g;
  bool nhwc;
  StemActivation act;
};

TEST_P(IsaVariant, StemConvolutionMatchesTheDefinition) {
  auto geo = [](int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc, int64_t k, int64_t s, int64_t p) {
    return StemConvGeometry{n, c, h, w, oc, k, k, (h + 2 * p - k) / s + 1, (w + 2 * p - k) / s + 1, s, s, p, p};
  };
  const StemCase cases[] = {
      {"YOLOv8 stem 3->16 3x3/2", geo(1, 3, 37, 45, 16, 3, 2, 1), false, StemActivation::kNone},
      {"two images, 3->32 3x3/2, ReLU", geo(2, 3, 20, 33, 32, 3, 2, 1), false, StemActivation::kRelu},
      {"YOLOv5 stem 3->24 6x6/2", geo(1, 3, 30, 41, 24, 6, 2, 2), false, StemActivation::kHardSwish},
      {"3->8 3x3/1 (8 lanes)", geo(1, 3, 17, 50, 8, 3, 1, 1), false, StemActivation::kLeakyRelu},
      {"1->20 7x7/2, Clip", geo(1, 1, 31, 29, 20, 7, 2, 3), false, StemActivation::kClip},
      {"4->16 5x5/1 (generic)", geo(1, 4, 19, 27, 16, 5, 1, 2), false, StemActivation::kNone},
      {"3->16 1x1/1", geo(1, 3, 9, 40, 16, 1, 1, 0), false, StemActivation::kNone},
      {"channels-last 3->16 3x3/2", geo(1, 3, 21, 26, 16, 3, 2, 1), true, StemActivation::kNone},
      {"channels-last 8->8 3x3/1", geo(1, 8, 16, 35, 8, 3, 1, 1), true, StemActivation::kRelu},
  };
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const StemCase& k : cases) {
    const StemConvGeometry& g = k.g;
    std::vector<float> x(static_cast<size_t>(g.n * g.c * g.h * g.w)), w(static_cast<size_t>(g.oc * g.c * g.kh * g.kw)),
        b(static_cast<size_t>(g.oc));
    for (auto* v : {&x, &w, &b})
      for (float& f : *v) f = u(rng);
    const float alpha = k.act == StemActivation::kClip ? -0.3f : 0.1f, beta = 0.4f;
    const StemConv conv(g, w.data(), b.data(), k.act, alpha, beta);
    std::vector<float> y(static_cast<size_t>(g.n * g.oh * g.ow * g.oc), std::numeric_limits<float>::quiet_NaN());
    std::atomic<int> finished{0};  // finish_rows runs on the kernel's threads
    for (int threads : {1, 3}) {
      conv.run_isa(GetParam(), x.data(), k.nhwc, y.data(), threads, [&](float*, int64_t count) { finished += count > 0; });
      const auto want = test::reference_stem_conv(g, x, k.nhwc, w, b, k.act, alpha, beta);
      double worst = 0;
      for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, double{std::fabs(y[i] - want[i])});
      EXPECT_LT(worst, 1e-5) << k.name << ", " << threads << " threads";
    }
    EXPECT_EQ(finished.load(), 2 * g.n * g.oh) << k.name << ": every output row is handed to finish_rows once a run";
  }
}

TEST_P(IsaVariant, SiluAndSigmoidMatchStdExp) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0, 6);
  for (int64_t n : {0, 1, 7, 15, 16, 17, 31, 33, 100, 1001}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = d(rng);
    if (n >= 7) {
      x[0] = -100.f, x[1] = 100.f, x[2] = 0.f, x[3] = -87.5f, x[4] = 88.5f, x[5] = std::numeric_limits<float>::quiet_NaN();
    }
    std::vector<float> silu(x.size(), -1.f), sig(x.size(), -1.f);
    native::ops::silu_isa(GetParam(), x.data(), silu.data(), n);
    native::ops::sigmoid_isa(GetParam(), x.data(), sig.data(), n);
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(silu[i]) && std::isnan(sig[i])) << "NaN in gives NaN out";
        continue;
      }
      const double s = 1.0 / (1.0 + std::exp(-double{x[i]}));
      EXPECT_NEAR(sig[i], s, 2e-6 * s + 1e-30) << "sigmoid(" << x[i] << "), n " << n;
      EXPECT_NEAR(silu[i], x[i] * s, 2e-6 * std::fabs(x[i] * s) + 1e-30) << "silu(" << x[i] << "), n " << n;
    }
  }
  std::vector<float> a(50, 1.5f);
  native::ops::silu_isa(GetParam(), a.data(), a.data(), 50);  // in place
  EXPECT_NEAR(a[49], 1.5 / (1 + std::exp(-1.5)), 2e-6);
}

// YOLOv8's DFL: the expected bin under the softmax of 16 logits, for rows of anchors of any length
// (vector blocks and the tail), bins strided as the head lays them out.
TEST_P(IsaVariant, BinExpectationMatchesTheSoftmaxDefinition) {
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0, 4);
  const int64_t k = 16;
  std::vector<float> w(static_cast<size_t>(k));
  for (int64_t b = 0; b < k; ++b) w[static_cast<size_t>(b)] = static_cast<float>(b);
  for (int64_t a : {1, 15, 16, 17, 40, 161}) {
    const int64_t sk = a + 3;
    std::vector<float> x(static_cast<size_t>(k * sk));
    for (float& v : x) v = d(rng);
    x[0] = 60.f;  // one dominant bin
    std::vector<float> y(static_cast<size_t>(a), -1.f);
    native::ops::bin_expectation::row_kernel(GetParam())(x.data(), y.data(), a, k, sk, w.data(), 0.5f);
    for (int64_t i = 0; i < a; ++i) {
      double m = -1e30, sum = 0, dot = 0;
      for (int64_t b = 0; b < k; ++b) m = std::max(m, double{x[static_cast<size_t>(b * sk + i)]});
      for (int64_t b = 0; b < k; ++b) {
        const double e = std::exp(x[static_cast<size_t>(b * sk + i)] - m);
        sum += e, dot += e * b;
      }
      EXPECT_NEAR(y[static_cast<size_t>(i)], dot / sum + 0.5, 1e-5 * (dot / sum + 0.5)) << "anchor " << i << " of " << a;
    }
  }
}

TEST_P(IsaVariant, ScoreScansMatchThePlainLoops) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0, 1);
  for (int n = 1; n <= 90; ++n)
    for (int trial = 0; trial < 5; ++trial) {
      std::vector<float> p(static_cast<size_t>(n));
      for (float& v : p) v = u(rng);
      if (trial == 1) p[static_cast<size_t>(n - 1)] = 2.f;  // the maximum in the tail
      const float t = trial == 2 ? 2.f : 0.9f;
      EXPECT_EQ(scan::row_max_isa(GetParam(), p.data(), n), scan::row_max_plain(p.data(), n)) << "n " << n;
      EXPECT_EQ(scan::row_any_at_least_isa(GetParam(), p.data(), n, t), scan::row_any_at_least_plain(p.data(), n, t))
          << "n " << n << ", threshold " << t;
    }
}

INSTANTIATE_TEST_SUITE_P(CpuIsa, IsaVariant, ::testing::Values(Isa::kBaseline, Isa::kAvx2, Isa::kAvx512), isa_param_name);

TEST(CpuIsa, NamesParseBackAndTheActiveLevelIsOneThisProcessorRuns) {
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx2Vnni, Isa::kAvx512, Isa::kAvx512Vnni, Isa::kAvx512Bf16}) EXPECT_EQ(cpu::parse_isa(cpu::isa_name(isa)), isa);
  EXPECT_FALSE(cpu::parse_isa("avx3"));
  EXPECT_LE(cpu::active_isa(), cpu::detected_isa());
  const auto runnable = cpu::runnable_isas();
  ASSERT_FALSE(runnable.empty());
  EXPECT_EQ(runnable.front(), Isa::kBaseline);
  EXPECT_EQ(runnable.back(), cpu::detected_isa());
  EXPECT_FALSE(cpu::onednn_isa_name().empty());
}

}  // namespace
}  // namespace sd
