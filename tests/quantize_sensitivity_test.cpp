// quantize/sensitivity.cpp on a small constructed model: four convolutions in a chain, one of which
// writes a channel of huge negative values (an outlier that the Relu after it removes), so that
// one uint8 scale for its output wipes out the other channels. The analysis must find that one
// convolution, and only it, and the model with it kept float must be close to fp32 again.
#include <gtest/gtest.h>

#include <random>

#include "engine/native/session.h"
#include "onnx_builder.h"
#include "quantize/calibrator.h"
#include "quantize/qdq_rewrite.h"
#include "quantize/sensitivity.h"

namespace sd {
namespace {

using test::OnnxBuilder;

// x [1, 4, 8, 8] -> conv_a -> Relu -> conv_b -> Relu -> conv_c -> Relu -> head -> y. conv_b's
// output channel 0 is about -1000 (weights -500 on it, bias -500); the other channels are O(1).
onnx::ModelProto chain_with_outlier() {
  OnnxBuilder b(13);
  b.input("x", {1, 4, 8, 8});
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  auto weights = [&](bool outlier) {
    std::vector<float> w(16);
    for (auto& v : w) v = u(rng);
    if (outlier)
      for (int i = 0; i < 4; ++i) w[static_cast<size_t>(i)] = -500.f;  // output channel 0
    return w;
  };
  const char* names[] = {"conv_a", "conv_b", "conv_c", "head"};
  std::string in = "x";
  for (int k = 0; k < 4; ++k) {
    const std::string n = names[k];
    b.initializer(n + "_w", {4, 4, 1, 1}, weights(n == "conv_b"));
    std::vector<float> bias(4, 0.1f);
    if (n == "conv_b") bias[0] = -500.f;
    b.initializer(n + "_b", {4}, bias);
    b.node("Conv", {in, n + "_w", n + "_b"}, {n + "_out"})->set_name(n);
    if (n == "head") break;
    b.node("Relu", {n + "_out"}, {n + "_relu"});
    in = n + "_relu";
  }
  b.output("head_out");
  return b.model();
}

TEST(QuantizeSensitivity, KeepsExactlyTheConvolutionWithAnOutlierChannelFloat) {
  const onnx::ModelProto model = chain_with_outlier();
  auto plan = quant::plan_quantization(model, {}, "m.onnx", quant::HeadRule::kFloat);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->quantized.size(), 3u);  // the head is kept by the rule

  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<native::HostTensor> inputs;
  for (int i = 0; i < 4; ++i) {
    std::vector<float> x(4 * 8 * 8);
    for (auto& v : x) v = u(rng);
    inputs.push_back(native::HostTensor::copy_of(native::DType::kFloat32, Shape{1, 4, 8, 8}, x.data()));
  }
  auto cal = quant::Calibrator::create(model, ".", plan->activations, quant::RangeMethod::kMinMax, 1);
  ASSERT_TRUE(cal) << cal.error().message;
  for (const auto& in : inputs) ASSERT_TRUE((*cal)->observe(in.ref()));
  const auto ranges = (*cal)->ranges();
  ASSERT_LT(ranges.at("conv_b_out").lo, -500.f);  // the outlier is there

  quant::SensitivityOptions so;  // the command's defaults
  auto report = quant::analyze_sensitivity(model, ".", *plan, ranges, inputs, so, "m.onnx");
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->scores.size(), 3u);
  EXPECT_EQ(report->scores[0].label, "conv_b");
  ASSERT_EQ(report->kept.size(), 1u);
  EXPECT_EQ(report->kept[0].label, "conv_b");
  // All int8: the other channels are crushed; conv_b float: the error is under the target.
  EXPECT_GT(report->error_all, 10 * so.target);
  EXPECT_LT(report->error_final, so.target);
  EXPECT_GT(report->scores[0].score, 100 * report->scores[1].score);

  // A budget of 0 keeps nothing.
  so.max_float = 0;
  auto none = quant::analyze_sensitivity(model, ".", *plan, ranges, inputs, so, "m.onnx");
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->kept.empty());
  EXPECT_GT(none->error_final, 10 * so.target);
}

}  // namespace
}  // namespace sd
