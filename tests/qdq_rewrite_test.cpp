// quantize/qdq_rewrite.cpp on small graphs: a MatMul between two float ops is quantized (per
// tensor, no bias) and the written QDQ model computes what the float one does within the
// quantization step; a model of opset 12 with a Split attribute is raised to 13 with the split
// as an input; the rule keeps the node that feeds an output directly in float, or (--head
// int8-input, the default) quantizes its input and weights and leaves its output float.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "engine/native/cpu/int8_support.h"
#include "engine/native/session.h"
#include "onnx_builder.h"
#include "quantize/calibrator.h"
#include "quantize/qdq_rewrite.h"
#include "quantize/sensitivity.h"

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

// A YOLOv8-like head: x -> conv_a -> SiLU -> box (1x1) -> y, and conv_a's SiLU -> dfl_in (1x1)
// -> Softmax -> dfl (1x1) -> z. box and dfl feed outputs with no Conv after them. With --head
// int8-input box reads a quantized input through int8 weights and writes y in float (no
// QuantizeLinear after it); dfl, which reads a Softmax (not a quantized convolution's
// activation), stays float as with --head float.
onnx::ModelProto head_model() {
  OnnxBuilder b(13);
  b.input("x", {1, 3, 8, 8});
  std::mt19937 rng(19);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  auto rand = [&](size_t n) {
    std::vector<float> v(n);
    for (auto& f : v) f = u(rng);
    return v;
  };
  b.initializer("wa", {8, 3, 3, 3}, rand(8 * 27));
  b.initializer("ba", {8}, rand(8));
  b.initializer("wbox", {4, 8, 1, 1}, rand(32));
  b.initializer("bbox", {4}, rand(4));
  b.initializer("wd", {4, 8, 1, 1}, rand(32));
  b.initializer("wdfl", {1, 4, 1, 1}, {0.f, 1.f, 2.f, 3.f});
  auto* a = b.node("Conv", {"x", "wa", "ba"}, {"a"});
  a->set_name("conv_a");
  OnnxBuilder::attr_ints(a, "pads", {1, 1, 1, 1});
  b.node("Sigmoid", {"a"}, {"a_sig"});
  b.node("Mul", {"a", "a_sig"}, {"a_silu"});
  b.node("Conv", {"a_silu", "wbox", "bbox"}, {"y"})->set_name("box");
  b.node("Conv", {"a_silu", "wd"}, {"d"})->set_name("dfl_in");
  OnnxBuilder::attr_int(b.node("Softmax", {"d"}, {"p"}), "axis", 1);
  b.node("Conv", {"p", "wdfl"}, {"z"})->set_name("dfl");
  b.output("y");
  b.output("z");
  return b.model();
}

std::vector<float> input_8x8(int seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> x(3 * 64);
  for (auto& v : x) v = u(rng);
  return x;
}

TEST(QdqRewrite, HeadConvolutionGetsInt8InputAndWeightsAndKeepsItsOutputFloat) {
  const onnx::ModelProto model = head_model();
  auto old_rule = quant::plan_quantization(model, {}, "m.onnx", quant::HeadRule::kFloat);
  ASSERT_TRUE(old_rule) << old_rule.error().message;
  EXPECT_EQ(old_rule->kept_by_rule, (std::vector<std::string>{"box", "dfl"}));
  EXPECT_TRUE(old_rule->float_output.empty());

  auto plan = quant::plan_quantization(model, {}, "m.onnx");  // the default: int8-input
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->kept_by_rule, std::vector<std::string>{"dfl"});
  ASSERT_EQ(plan->quantized.size(), 3u);  // conv_a, box, dfl_in
  ASSERT_EQ(plan->float_output.size(), 1u);
  EXPECT_EQ(quant::node_label(model.graph().node(plan->float_output[0])), "box");
  // box's input needs a range, its output none.
  EXPECT_EQ(plan->activations, (std::vector<std::string>{"x", "a", "a_silu", "d"}));

  const std::vector<float> x = input_8x8(3);
  auto cal = quant::Calibrator::create(model, ".", plan->activations, quant::RangeMethod::kMinMax, 1);
  ASSERT_TRUE(cal) << cal.error().message;
  const auto in = native::HostTensor::copy_of(native::DType::kFloat32, Shape{1, 3, 8, 8}, x.data());
  ASSERT_TRUE((*cal)->observe(in.ref()));
  const auto ranges = (*cal)->ranges();
  auto qdq = quant::write_qdq(model, *plan, ranges, "m.onnx");
  ASSERT_TRUE(qdq) << qdq.error().message;
  std::map<std::string, const onnx::NodeProto*> producer;
  std::map<std::string, std::vector<std::string>> readers;
  for (const auto& n : qdq->graph().node()) {
    for (const auto& o : n.output()) producer[o] = &n;
    for (const auto& i : n.input()) readers[i].push_back(n.op_type());
  }
  // box: DequantizeLinear of a_silu's quantized bytes and of int8 weights -> Conv -> y, the output.
  const onnx::NodeProto* box = producer.at("y");
  EXPECT_EQ(box->name(), "box");
  EXPECT_EQ(producer.at(box->input(0))->op_type(), "DequantizeLinear");
  EXPECT_EQ(producer.at(box->input(1))->op_type(), "DequantizeLinear");
  EXPECT_EQ(producer.at(box->input(2))->op_type(), "DequantizeLinear");  // int32 bias
  EXPECT_TRUE(readers["y"].empty());  // no QuantizeLinear after it
  // dfl: float weights, no QDQ around it.
  const onnx::NodeProto* dfl = producer.at("z");
  EXPECT_EQ(dfl->name(), "dfl");
  EXPECT_EQ(dfl->input(0), "p");
  EXPECT_EQ(dfl->input(1), "wdfl");
  EXPECT_EQ(qdq->graph().output(0).name(), "y");

  // The same values as fp32 within the quantization of box's input and weights: a_silu's step
  // (its range / 255) times sum |w| (8 weights up to 0.5) plus the steps before it, a few.
  const std::vector<float> ref = run_model(model, x, Shape{1, 3, 8, 8});
  const std::vector<float> got = run_model(*qdq, x, Shape{1, 3, 8, 8});
  ASSERT_EQ(got.size(), ref.size());
  const float step = (ranges.at("a_silu").hi - std::min(0.f, ranges.at("a_silu").lo)) / 255.f;
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], 8 * 0.5f * step * 3) << i;

  // The engine folds box into an Int8Conv writing floats where 8-bit weights are exact (VNNI).
  std::string bytes;
  ASSERT_TRUE(qdq->SerializeToString(&bytes));
  auto loaded = native::NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".");
  ASSERT_TRUE(loaded) << loaded.error().message;
  int int8_convs = 0, float_convs = 0;
  for (const auto& n : (*loaded)->graph().nodes) {
    int8_convs += n.op_type == "Int8Conv";
    float_convs += n.op_type == "Conv" || n.op_type == "FusedConv" || n.op_type == "BinExpectation";
  }
  if (native::int8_dot_products_exact()) {
    EXPECT_EQ(int8_convs, 3);  // conv_a, box, dfl_in
    EXPECT_EQ(float_convs, 1);  // dfl (Softmax + its 1x1 Conv: a BinExpectation)
  }

  // The sensitivity analysis can still keep box float: the plan without it writes box as before.
  std::vector<int> without_box;
  for (int i : plan->quantized)
    if (i != plan->float_output[0]) without_box.push_back(i);
  const quant::QuantPlan kept = quant::restrict_plan(model, *plan, without_box);
  EXPECT_TRUE(kept.float_output.empty());
  auto qdq2 = quant::write_qdq(model, kept, ranges, "m.onnx");
  ASSERT_TRUE(qdq2) << qdq2.error().message;
  for (const auto& n : qdq2->graph().node())
    if (n.name() == "box") {
      EXPECT_EQ(n.input(0), "a_silu");
      EXPECT_EQ(n.input(1), "wbox");
    }
}

// A head convolution whose float output is also read by a quantized convolution: the output
// keeps its name and float value (the model's output), and the reader gets a QDQ pair of its own.
TEST(QdqRewrite, FloatOutputReadByAQuantizedConvolutionGetsItsOwnQdqPair) {
  // x -> conv_a -> Relu -> conv_h -> h (an output) -> conv_c -> Relu -> conv_d -> y
  OnnxBuilder b(13);
  b.input("x", {1, 3, 8, 8});
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (const char* w : {"wa", "wh", "wc", "wd"}) {
    std::vector<float> v(std::string(w) == "wa" ? 4 * 3 : 16);
    for (auto& f : v) f = u(rng);
    b.initializer(w, {4, std::string(w) == "wa" ? 3 : 4, 1, 1}, v);
  }
  b.node("Conv", {"x", "wa"}, {"a"})->set_name("conv_a");
  b.node("Relu", {"a"}, {"ar"});
  b.node("Conv", {"ar", "wh"}, {"h"})->set_name("conv_h");
  b.node("Conv", {"h", "wc"}, {"c"})->set_name("conv_c");
  b.node("Relu", {"c"}, {"cr"});
  b.node("Conv", {"cr", "wd"}, {"y"})->set_name("conv_d");
  b.output("h");
  b.output("y");
  const onnx::ModelProto& model = b.model();
  auto plan = quant::plan_quantization(model, {}, "m.onnx");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_TRUE(plan->kept_by_rule.empty());
  ASSERT_EQ(plan->quantized.size(), 4u);
  ASSERT_EQ(plan->float_output.size(), 2u);  // conv_h and conv_d
  const std::vector<float> x = input_8x8(7);
  auto cal = quant::Calibrator::create(model, ".", plan->activations, quant::RangeMethod::kMinMax, 1);
  ASSERT_TRUE(cal) << cal.error().message;
  const auto in = native::HostTensor::copy_of(native::DType::kFloat32, Shape{1, 3, 8, 8}, x.data());
  ASSERT_TRUE((*cal)->observe(in.ref()));
  auto qdq = quant::write_qdq(model, *plan, (*cal)->ranges(), "m.onnx");
  ASSERT_TRUE(qdq) << qdq.error().message;
  for (const auto& n : qdq->graph().node()) {
    if (n.name() == "conv_h") EXPECT_EQ(n.output(0), "h");
    if (n.name() == "conv_c") EXPECT_EQ(n.input(0), "h_DequantizeLinear_Output");
    if (n.name() == "conv_d") EXPECT_EQ(n.output(0), "y");
    if (n.op_type() == "QuantizeLinear" && n.input(0) == "h") EXPECT_EQ(n.output(0), "h_QuantizeLinear_Output");
  }
  std::string bytes;
  ASSERT_TRUE(qdq->SerializeToString(&bytes));
  auto m = native::NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".");
  ASSERT_TRUE(m) << m.error().message;
  auto s = native::NativeSession::create(*m, {});
  ASSERT_TRUE(s) << s.error().message;
  std::vector<native::TensorRef> refs{in.ref()};
  std::vector<native::HostTensor> out;
  ASSERT_TRUE((*s)->run(refs, out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].dtype(), native::DType::kFloat32);
  EXPECT_EQ(out[0].numel(), 4 * 64);
}

}  // namespace
}  // namespace sd
