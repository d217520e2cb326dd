// `streamdet quantize --reduce-range` (quantize/qdq_rewrite.cpp): weights in 7 bits, so that the
// model runs in int8 on x86 processors without VNNI too. What a user on such a processor notices:
// with 8-bit weights the engine leaves every convolution of the QDQ model in float (its int8
// convolutions would not be exact there: engine/native/cpu/int8_support.h), with 7-bit weights it
// folds them all into int8 convolutions.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/native/graph.h"
#include "engine/native/onnx/onnx_import.h"
#include "engine/native/passes/passes.h"
#include "onnx_builder.h"
#include "quantize/calibrator.h"
#include "quantize/qdq_rewrite.h"

namespace sd {
namespace {

using test::OnnxBuilder;

// x [1, 3, 16, 16] -> conv_a 3x3 -> Relu -> conv_b 3x3 -> Relu -> head 1x1 -> y (the head is
// kept float: the quantizer's rule with --head float). Weights of varied magnitudes, so that
// 8-bit weights use their whole range.
onnx::ModelProto two_convs_and_a_head() {
  OnnxBuilder b(13);
  b.input("x", {1, 3, 16, 16});
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.f, 0.3f);
  auto weights = [&](size_t n) {
    std::vector<float> w(n);
    for (auto& v : w) v = g(rng);
    return w;
  };
  b.initializer("conv_a_w", {8, 3, 3, 3}, weights(8 * 3 * 9));
  b.initializer("conv_b_w", {8, 8, 3, 3}, weights(8 * 8 * 9));
  b.initializer("head_w", {4, 8, 1, 1}, weights(4 * 8));
  auto* a = b.node("Conv", {"x", "conv_a_w"}, {"a"});
  a->set_name("conv_a");
  b.attr_ints(a, "pads", {1, 1, 1, 1});
  b.node("Relu", {"a"}, {"a_relu"});
  auto* c = b.node("Conv", {"a_relu", "conv_b_w"}, {"b"});
  c->set_name("conv_b");
  b.attr_ints(c, "pads", {1, 1, 1, 1});
  b.node("Relu", {"b"}, {"b_relu"});
  b.node("Conv", {"b_relu", "head_w"}, {"y"})->set_name("head");
  b.output("y");
  return b.model();
}

struct Written {
  onnx::ModelProto model;
  int worst_weight = 0;  // the largest |q| over the quantized weights
};

Written quantize(bool reduce_range) {
  const onnx::ModelProto model = two_convs_and_a_head();
  auto plan = quant::plan_quantization(model, {}, "m.onnx", quant::HeadRule::kFloat);
  EXPECT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->quantized.size(), 2u);
  plan->reduce_range = reduce_range;
  auto cal = quant::Calibrator::create(model, ".", plan->activations, quant::RangeMethod::kMinMax, 1);
  EXPECT_TRUE(cal) << cal.error().message;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int i = 0; i < 3; ++i) {
    std::vector<float> x(3 * 16 * 16);
    for (auto& v : x) v = u(rng);
    const auto in = native::HostTensor::copy_of(native::DType::kFloat32, Shape{1, 3, 16, 16}, x.data());
    EXPECT_TRUE((*cal)->observe(in.ref()));
  }
  auto qdq = quant::write_qdq(model, *plan, (*cal)->ranges(), "m.onnx");
  EXPECT_TRUE(qdq) << qdq.error().message;
  Written w{*qdq, 0};
  for (const auto& t : w.model.graph().initializer()) {
    if (t.data_type() != onnx::TensorProto::INT8 || t.name().find("_quantized") == std::string::npos) continue;
    for (char byte : t.raw_data()) w.worst_weight = std::max(w.worst_weight, std::abs(static_cast<int>(static_cast<int8_t>(byte))));
  }
  return w;
}

// Int8Conv nodes after the QDQ fusion as it runs on a processor without VNNI (int8_exact false).
// How many QDQ convolutions fold without VNNI, and how many of them are computed in float32 for
// want of it alone.
struct Folded {
  int folded = -1, left_inexact = -1;
};
Folded folded_without_vnni(const onnx::ModelProto& model) {
  auto g = native::graph_from_onnx(model, ".", "m.onnx");
  EXPECT_TRUE(g) << g.error().message;
  if (!g) return {};
  Folded f;
  f.folded = native::passes::fuse_qdq_convolutions(*g, /*int8_exact=*/false, &f.left_inexact);
  return f;
}

TEST(QuantizeReduceRange, SevenBitWeightsLetTheModelRunInInt8WithoutVnni) {
  const Written full = quantize(false), reduced = quantize(true);
  EXPECT_EQ(full.worst_weight, 127);  // each channel's largest weight maps to 127
  EXPECT_EQ(reduced.worst_weight, 63);
  const Folded f = folded_without_vnni(full.model), r = folded_without_vnni(reduced.model);
  EXPECT_EQ(f.folded, 2);        // Int8Convs computed in float32 (ops::kInt8InFloat)
  EXPECT_EQ(f.left_inexact, 2);  // what the load's note counts
  EXPECT_EQ(r.folded, 2);
  EXPECT_EQ(r.left_inexact, 0);
}

}  // namespace
}  // namespace sd
