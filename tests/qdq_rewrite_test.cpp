// quantize/qdq_rewrite.cpp on small graphs: a MatMul between two float ops is quantized (per
// tensor, no bias) and the written QDQ model computes what the float one does within the
// quantization step; a model of opset 12 with a Split attribute is raised to 13 with the split
// as an input; the rule keeps the node that feeds an output directly in float.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/native/session.h"
#include "onnx_builder.h"
#include "quantize/qdq_rewrite.h"

namespace sd {
namespace {

using test::OnnxBuilder;

std::vector<float> run_model(const onnx::ModelProto& m, const std::vector<float>& x, Shape shape) {
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  auto model = native::NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".");
  EXPECT_TRUE(model) << model.error().message;
  if (!model) return {};
  auto s = native::NativeSession::create(*model, {});
  EXPECT_TRUE(s) << s.error().message;
  native::HostTensor in = native::HostTensor::copy_of(native::DType::kFloat32, shape, x.data());
  std::vector<native::TensorRef> refs{in.ref()};
  std::vector<native::HostTensor> out;
  auto st = (*s)->run(refs, out);
  EXPECT_TRUE(st) << st.error().message;
  if (!st) return {};
  return std::vector<float>(out[0].as<float>(), out[0].as<float>() + out[0].numel());
}

TEST(QdqRewrite, MatMulBetweenFloatOpsIsQuantizedPerTensorAndKeepsItsValues) {
  // x [2, 8] -> MatMul(W1 [8, 6]) -> Relu -> MatMul(W2 [6, 4]) -> y. The second MatMul feeds the
  // output directly: the rule keeps it float; the first is quantized.
  OnnxBuilder b(13);
  b.input("x", {2, 8});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> w1(48), w2(24), x(16);
  for (auto& v : w1) v = u(rng);
  for (auto& v : w2) v = u(rng);
  for (auto& v : x) v = u(rng);
  b.initializer("w1", {8, 6}, w1);
  b.initializer("w2", {6, 4}, w2);
  b.node("MatMul", {"x", "w1"}, {"h"})->set_name("mm1");
  b.node("Relu", {"h"}, {"r"});
  b.node("MatMul", {"r", "w2"}, {"y"})->set_name("mm2");
  b.output("y");
  const onnx::ModelProto& model = b.model();

  auto plan = quant::plan_quantization(model, {}, "m.onnx");
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->quantized.size(), 1u);
  EXPECT_EQ(plan->kept_by_rule, std::vector<std::string>{"mm2"});
  EXPECT_EQ(plan->activations, (std::vector<std::string>{"x", "h"}));
  // Ranges as calibration would find them on this one input.
  const std::vector<float> ref = run_model(model, x, Shape{2, 8});
  std::map<std::string, quant::Range> ranges{{"x", {-1.f, 1.f}}, {"h", {-4.f, 4.f}}};
  auto qdq = quant::write_qdq(model, *plan, ranges, "m.onnx");
  ASSERT_TRUE(qdq) << qdq.error().message;
  int q = 0, dq = 0;
  for (const auto& n : qdq->graph().node()) {
    q += n.op_type() == "QuantizeLinear";
    dq += n.op_type() == "DequantizeLinear";
    if (n.name() == "mm2") EXPECT_EQ(n.input(1), "w2");  // float weights
  }
  EXPECT_EQ(q, 2);   // x and h
  EXPECT_EQ(dq, 3);  // x, h, w1
  const std::vector<float> got = run_model(*qdq, x, Shape{2, 8});
  ASSERT_EQ(got.size(), ref.size());
  // Steps: x 2/255, h 8/255, w1 max|w1|/127: a few steps of h through |w2| sums at most.
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], 0.15) << i;
}

TEST(QdqRewrite, Opset12SplitIsRaisedTo13ForPerChannelWeights) {
  // x [1, 2, 4, 4] -> Conv(w [4, 2, 1, 1]) -> Split(axis 1, split [2, 2]) -> Conv each -> Add -> y
  OnnxBuilder b(12);
  b.input("x", {1, 2, 4, 4});
  b.initializer("w", {4, 2, 1, 1}, {1, 0, 0, 1, 1, 1, -1, 1});
  b.initializer("wa", {1, 2, 1, 1}, {0.5f, 0.25f});
  b.initializer("wb", {1, 2, 1, 1}, {-0.5f, 1.f});
  b.node("Conv", {"x", "w"}, {"c"})->set_name("conv");
  auto* split = b.node("Split", {"c"}, {"s0", "s1"});
  OnnxBuilder::attr_int(split, "axis", 1);
  OnnxBuilder::attr_ints(split, "split", {2, 2});
  b.node("Conv", {"s0", "wa"}, {"a"})->set_name("ca");
  b.node("Conv", {"s1", "wb"}, {"bb"})->set_name("cb");
  b.node("Add", {"a", "bb"}, {"y"});
  b.output("y");
  auto plan = quant::plan_quantization(b.model(), {}, "m.onnx");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_TRUE(plan->upgrade_opset);
  EXPECT_TRUE(plan->per_channel);
  EXPECT_EQ(plan->kept_by_rule, (std::vector<std::string>{"ca", "cb"}));
  auto qdq = quant::write_qdq(b.model(), *plan, {{"x", {0.f, 1.f}}, {"c", {-1.f, 2.f}}}, "m.onnx");
  ASSERT_TRUE(qdq) << qdq.error().message;
  EXPECT_EQ(qdq->opset_import(0).version(), 13);
  for (const auto& n : qdq->graph().node())
    if (n.op_type() == "Split") {
      EXPECT_EQ(n.input_size(), 2);
      EXPECT_EQ(n.attribute_size(), 1);  // axis only
    }
  std::vector<float> x(32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) / 7.f;
  const auto ref = run_model(b.model(), x, Shape{1, 2, 4, 4});
  const auto got = run_model(*qdq, x, Shape{1, 2, 4, 4});
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], 0.03) << i;
}

}  // namespace
}  // namespace sd
