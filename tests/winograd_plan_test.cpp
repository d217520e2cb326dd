// Our Winograd convolution inside the engine (LoadOptions::conv3x3, cpu/dnnl_conv.cpp): a plan
// forced onto it gives the oneDNN plan's results on a small YOLO-like chain (SiLU, a residual
// sum, 24 and 40 channels, odd sizes; 32 and 48 for the AVX-512 variant), it takes exactly the
// eligible nodes, and the timed choice (on the AVX2 and the AVX-512 path alike) takes it on no
// other node and gives the oneDNN plan's results. Skipped, saying so, on processors without
// AVX2 + FMA (the AVX-512 case without AVX-512).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/conv_choice.h"
#include "engine/native/session.h"
#include "onnx_builder.h"

namespace sd::native {
namespace {

using test::OnnxBuilder;

constexpr const char* kOurs = "streamdet:wino_4x3:avx2";
constexpr const char* kOurs512 = "streamdet:wino_4x3:avx512";
constexpr const char* kOurs6x6 = "streamdet:wino_6x3:avx512";
constexpr const char* kOurs6x6Avx2 = "streamdet:wino_6x3:avx2";

bool is_ours(const std::string& impl) { return impl == kOurs || impl == kOurs512 || impl == kOurs6x6 || impl == kOurs6x6Avx2; }

// x [1,16,23,29] -> 3x3 16->mid SiLU (a1) -> 3x3 mid->mid SiLU (a2) -> a1 + a2 (a residual sum
// fused into the second convolution) -> 3x3 mid->wide with bias (y1); then three convolutions the
// kernel must not take: 3x3 stride 2, 1x1, and 3x3 into 8 channels. mid 24, wide 40 by default.
std::string chain_model(int64_t mid, int64_t wide) {
  OnnxBuilder b;
  b.input("x", {1, 16, 23, 29});
  b.random_initializer("w1", {mid, 16, 3, 3}, -0.2f, 0.2f);
  b.random_initializer("b1", {mid}, -0.2f, 0.2f);
  b.random_initializer("w2", {mid, mid, 3, 3}, -0.2f, 0.2f);
  b.random_initializer("b2", {mid}, -0.2f, 0.2f);
  b.random_initializer("w3", {wide, mid, 3, 3}, -0.2f, 0.2f);
  b.random_initializer("b3", {wide}, -0.2f, 0.2f);
  b.random_initializer("w4", {16, wide, 3, 3}, -0.2f, 0.2f);
  b.random_initializer("w5", {16, 16, 1, 1}, -0.2f, 0.2f);
  b.random_initializer("w6", {8, 16, 3, 3}, -0.2f, 0.2f);
  auto conv = [&](const std::string& in, const std::string& w, const std::string& bias, const std::string& out, int64_t stride, int64_t pad) {
    std::vector<std::string> ins{in, w};
    if (!bias.empty()) ins.push_back(bias);
    auto* n = b.node("Conv", ins, {out});
    OnnxBuilder::attr_ints(n, "pads", {pad, pad, pad, pad});
    OnnxBuilder::attr_ints(n, "strides", {stride, stride});
  };
  conv("x", "w1", "b1", "c1", 1, 1);
  b.node("Sigmoid", {"c1"}, {"s1"});
  b.node("Mul", {"c1", "s1"}, {"a1"});
  conv("a1", "w2", "b2", "c2", 1, 1);
  b.node("Sigmoid", {"c2"}, {"s2"});
  b.node("Mul", {"c2", "s2"}, {"a2"});
  b.node("Add", {"a1", "a2"}, {"r"});
  conv("r", "w3", "b3", "y1", 1, 1);
  conv("y1", "w4", "", "d", 2, 1);
  conv("d", "w5", "", "p", 1, 0);
  conv("p", "w6", "", "y2", 1, 1);
  b.output("y1");
  b.output("y2");
  return b.bytes();
}

struct ChainRun {
  std::vector<HostTensor> outputs;
  std::vector<std::string> implementations;  // of the convolution steps, in plan order
};

ChainRun run_model(const std::string& bytes, const Shape& shape, Conv3x3Choice choice) {
  LoadOptions lo;
  lo.conv3x3 = choice;
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", lo);
  EXPECT_TRUE(m) << (m ? "" : m.error().message);
  if (!m) return {};
  SessionOptions so;
  so.threads = 2;
  auto s = NativeSession::create(*m, so);
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  if (!s) return {};
  HostTensor x(DType::kFloat32, shape);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2, 2);
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  ChainRun r;
  const TensorRef in = x.ref();
  auto st = (*s)->run({&in, 1}, r.outputs);
  EXPECT_TRUE(st) << (st ? "" : st.error().message);
  auto summary = (*s)->plan_summary({x.shape()});
  EXPECT_TRUE(summary) << (summary ? "" : summary.error().message);
  if (summary)
    for (const auto& step : summary->steps)
      if (step.label.find("Conv") != std::string::npos) r.implementations.push_back(step.implementation);
  return r;
}

ChainRun run_chain(Conv3x3Choice choice, int64_t mid = 24, int64_t wide = 40) {
  return run_model(chain_model(mid, wide), Shape{1, 16, 23, 29}, choice);
}

int count_ours(const ChainRun& r) { return static_cast<int>(std::count_if(r.implementations.begin(), r.implementations.end(), is_ours)); }

// Both runs' outputs agree within Winograd's float error (tests/winograd_conv_test.cpp): ~1e-6 of
// outputs of magnitude ~1 after three layers, where a wrong epilogue (SiLU, the sum, the bias)
// is ~0.1.
void expect_same_outputs(const ChainRun& a_run, const ChainRun& b_run, size_t outputs = 2, double tolerance = 2e-5) {
  ASSERT_EQ(a_run.outputs.size(), outputs);
  ASSERT_EQ(b_run.outputs.size(), outputs);
  for (size_t o = 0; o < outputs; ++o) {
    const HostTensor &a = a_run.outputs[o], &b = b_run.outputs[o];
    ASSERT_EQ(a.shape(), b.shape());
    double worst = 0, scale = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      worst = std::max(worst, double{std::fabs(a.as<float>()[i] - b.as<float>()[i])});
      scale = std::max(scale, double{std::fabs(b.as<float>()[i])});
    }
    EXPECT_GT(scale, 0.1) << "output " << o << " is not all near zero (the test would prove little)";
    EXPECT_LT(worst, tolerance * std::max(1.0, scale)) << "output " << o;
  }
}

#define SKIP_WITHOUT_AVX2() \
  if (cpu::detected_isa() < cpu::Isa::kAvx2) GTEST_SKIP() << "the Winograd kernel needs AVX2 + FMA; this processor has none"

TEST(WinogradPlan, ForcedOntoOurKernelMatchesTheOneDnnPlan) {
  SKIP_WITHOUT_AVX2();
  const ChainRun ours = run_chain(Conv3x3Choice::kWinograd), onednn = run_chain(Conv3x3Choice::kOneDnn);
  ASSERT_EQ(ours.implementations.size(), 6u);
  ASSERT_EQ(onednn.implementations.size(), 6u);
  // The three 3x3 stride-1 convolutions with 16+ channels in multiples of 8, and only those.
  // 24 and 40 channels are not multiples of 16: the AVX2 variant even on AVX-512.
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(ours.implementations[i] == kOurs, i < 3) << "convolution " << i << ": " << ours.implementations[i];
  EXPECT_EQ(count_ours(onednn), 0) << "forced onto oneDNN";
  expect_same_outputs(ours, onednn);
}

TEST(WinogradPlan, ForcedOntoTheAvx512VariantMatchesTheOneDnnPlan) {
  if (cpu::active_isa() < cpu::Isa::kAvx512)
    GTEST_SKIP() << "the AVX-512 variant needs the AVX-512 path; the active ISA is " << cpu::isa_name(cpu::active_isa());
  const ChainRun ours = run_chain(Conv3x3Choice::kWinograd, 32, 48), onednn = run_chain(Conv3x3Choice::kOneDnn, 32, 48);
  ASSERT_EQ(ours.implementations.size(), 6u);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(ours.implementations[i] == kOurs512, i < 3) << "convolution " << i << ": " << ours.implementations[i];
  EXPECT_EQ(count_ours(onednn), 0) << "forced onto oneDNN";
  expect_same_outputs(ours, onednn);
}

#define SKIP_WITHOUT_AVX512_PATH()                                                                         \
  if (cpu::active_isa() < cpu::Isa::kAvx512)                                                              \
  GTEST_SKIP() << "F(6x6, 3x3) needs the AVX-512 path; the active ISA is " << cpu::isa_name(cpu::active_isa())

TEST(WinogradPlan, ForcedOntoF6x6MatchesTheOneDnnPlan) {
  SKIP_WITHOUT_AVX512_PATH();
  const ChainRun ours = run_chain(Conv3x3Choice::kWinograd6x6, 32, 48), onednn = run_chain(Conv3x3Choice::kOneDnn, 32, 48);
  ASSERT_EQ(ours.implementations.size(), 6u);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(ours.implementations[i] == kOurs6x6, i < 3) << "convolution " << i << ": " << ours.implementations[i];
  expect_same_outputs(ours, onednn);
  // 24 and 40 channels (not multiples of 16): F(6x6, 3x3) on the AVX2 variant.
  const ChainRun narrow = run_chain(Conv3x3Choice::kWinograd6x6);
  ASSERT_EQ(narrow.implementations.size(), 6u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(narrow.implementations[i], kOurs6x6Avx2) << "convolution " << i;
  expect_same_outputs(narrow, run_chain(Conv3x3Choice::kOneDnn));
}

// YOLOv8n's C2f stages in miniature: `blocks` bottlenecks (3x3 SiLU, 3x3 SiLU, residual Add)
// at c channels and side x side, then a 3x3 stride-2 step down and two more bottlenecks at 2c,
// weights scaled as a trained net's keep activations of order 1 (uniform +-1/sqrt(9c)).
std::string yolo_like_model(int64_t c, int64_t side, int blocks) {
  OnnxBuilder b;
  b.input("x", {1, c, side, side});
  std::string cur = "x";
  int id = 0;
  auto conv = [&](const std::string& in, int64_t ci, int64_t co, int64_t stride) {
    const std::string n = std::to_string(id++), w = "w" + n, bias = "b" + n, y = "c" + n, s = "s" + n, a = "a" + n;
    const float r = 1.7f / std::sqrt(9.f * static_cast<float>(ci));
    b.random_initializer(w, {co, ci, 3, 3}, -r, r);
    b.random_initializer(bias, {co}, -0.1f, 0.1f);
    auto* node = b.node("Conv", {in, w, bias}, {y});
    OnnxBuilder::attr_ints(node, "pads", {1, 1, 1, 1});
    OnnxBuilder::attr_ints(node, "strides", {stride, stride});
    b.node("Sigmoid", {y}, {s});
    b.node("Mul", {y, s}, {a});
    return a;
  };
  auto bottleneck = [&](const std::string& in, int64_t ch) {
    const std::string mid = conv(in, ch, ch, 1), out = conv(mid, ch, ch, 1), sum = "r" + std::to_string(id++);
    b.node("Add", {in, out}, {sum});
    return sum;
  };
  for (int i = 0; i < blocks; ++i) cur = bottleneck(cur, c);
  cur = conv(cur, c, 2 * c, 2);
  for (int i = 0; i < 2; ++i) cur = bottleneck(cur, 2 * c);
  b.output(cur);
  return b.bytes();
}

// The outputs of YOLOv8n-like stacks (10, 6 and 8 Winograd-eligible layers deep, at YOLOv8n's
// 64-channel 40x40 -> 128-channel 20x20 and 32-channel 80x80 -> 64-channel 40x40 shapes, and at
// sizes 6 does not divide) with every eligible node on F(6x6, 3x3) against the oneDNN plan,
// within the engine's float32 bound for the Winograd plans (2e-5 of the output's scale, as above;
// measured 2.4e-5 at a scale of 5.9, 4e-6 of it: each layer's error is a few 1e-6 of its scale,
// and it does not compound beyond that through SiLU and the residual sums). The timed plan too.
TEST(WinogradPlan, YoloLikeStackOnF6x6MatchesTheOneDnnPlan) {
  SKIP_WITHOUT_AVX512_PATH();
  for (const auto& [c, side, blocks] : {std::tuple<int64_t, int64_t, int>{64, 40, 3}, {32, 80, 1}, {32, 26, 2}}) {
    const std::string bytes = yolo_like_model(c, side, blocks);
    const ChainRun ours = run_model(bytes, Shape{1, c, side, side}, Conv3x3Choice::kWinograd6x6),
                   onednn = run_model(bytes, Shape{1, c, side, side}, Conv3x3Choice::kOneDnn);
    EXPECT_EQ(count_ours(ours), 2 * blocks + 4) << c << " channels: every stride-1 3x3 on ours";
    EXPECT_EQ(std::count(ours.implementations.begin(), ours.implementations.end(), std::string(kOurs6x6)), 2 * blocks + 4);
    EXPECT_EQ(count_ours(onednn), 0);
    expect_same_outputs(ours, onednn, 1);
    // Timed (F(6x6) a candidate on the 80x80 maps): whichever won, the same results.
    const ChainRun timed = run_model(bytes, Shape{1, c, side, side}, Conv3x3Choice::kMeasured);
    expect_same_outputs(timed, onednn, 1);
  }
}

// The timed choice runs on the AVX2 and the AVX-512 path (against oneDNN's direct kernel there,
// and its Winograd or direct kernel here; F(4x4, 3x3) or F(6x6, 3x3) of ours): whichever was
// faster on each eligible node, never ours on the others, and the oneDNN plan's results either way.
TEST(WinogradPlan, TimedChoiceTakesOurKernelOnlyOnEligibleNodes) {
  SKIP_WITHOUT_AVX2();
  for (const auto& [mid, wide] : {std::pair<int64_t, int64_t>{24, 40}, {32, 48}}) {
    const ChainRun timed = run_chain(Conv3x3Choice::kMeasured, mid, wide), onednn = run_chain(Conv3x3Choice::kOneDnn, mid, wide);
    ASSERT_EQ(timed.implementations.size(), 6u);
    for (size_t i = 3; i < 6; ++i) EXPECT_FALSE(is_ours(timed.implementations[i])) << "convolution " << i << ", widths " << mid;
    // Within the forced plans' bound: the timing may take F(6x6, 3x3), whose error on this
    // chain (1.1e-4 at outputs of scale 12.5, measured) is about twice F(4x4, 3x3)'s (5.8e-5).
    SCOPED_TRACE("widths " + std::to_string(mid));
    expect_same_outputs(timed, onednn);
  }
}

}  // namespace
}  // namespace sd::native
