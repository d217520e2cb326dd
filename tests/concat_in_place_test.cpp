// The planner's Concat in place (exec/plan_concat.cpp): producers write their part of a Concat's
// output themselves. Every plan here must give the copying plan's results (concat_in_place off)
// bit for bit, with fewer Concat steps:
//  - a YOLOv8-style head tail in float (per scale Concat of box and class maps, layout
//    conversion, Reshape, Concat over the scales, Split, DFL-like box arithmetic and Sigmoid, the
//    last Concats at batch 1: contiguous parts, written by their producers, whatever they are);
//  - a QDQ C2f block, an SPPF-like Concat and a PAN-like upsampling Concat (the int8 plan: the
//    requantizing byte tables, the residual Int8AddTables and the QuantizeLinear after a float
//    MaxPool write the Concat's channels strided);
//  - a QuantizeLinear whose output something else reads too: not written in place.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/cpu_isa.h"
#include "engine/native/cpu/byte_table_kernel.h"
#include "engine/native/session.h"
#include "onnx_builder.h"
#include "qdq_model_builder.h"

namespace sd::native {
namespace {

using test::init_raw;
using test::OnnxBuilder;

struct Ran {
  std::vector<HostTensor> outputs;
  int concat_steps = 0, split_steps = 0, dense_copies = 0;
};

Ran run(const std::string& model, const HostTensor& x, bool in_place, const LoadOptions& lo = {}) {
  auto m = NativeModel::load_from_bytes(model.data(), model.size(), ".", lo);
  EXPECT_TRUE(m) << (m ? "" : m.error().message);
  if (!m) return {};
  SessionOptions so;
  so.threads = 2;
  so.concat_in_place = in_place;
  auto s = NativeSession::create(*m, so);
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  if (!s) return {};
  Ran r;
  auto summary = (*s)->plan_summary({x.shape()});
  EXPECT_TRUE(summary);
  if (summary)
    for (const auto& st : summary->steps) {
      r.concat_steps += st.label.rfind("Concat", 0) == 0;
      r.split_steps += st.label.rfind("Split", 0) == 0;
      r.dense_copies += st.label == "dense copy";
    }
  const TensorRef ref = x.ref();
  for (int k = 0; k < 2; ++k) {  // the second run reuses the arena the first one left dirty
    r.outputs.clear();
    auto st = (*s)->run(std::span<const TensorRef>(&ref, 1), r.outputs);
    EXPECT_TRUE(st) << (st ? "" : st.error().message);
  }
  return r;
}

HostTensor image(int64_t size, float lo, float hi) {
  HostTensor x(DType::kFloat32, Shape{1, 3, size, size});
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  return x;
}

void expect_identical(const Ran& in_place, const Ran& copying) {
  ASSERT_EQ(in_place.outputs.size(), copying.outputs.size());
  ASSERT_FALSE(copying.outputs.empty());
  for (size_t k = 0; k < copying.outputs.size(); ++k) {
    ASSERT_EQ(in_place.outputs[k].shape(), copying.outputs[k].shape()) << "output " << k;
    EXPECT_EQ(std::memcmp(in_place.outputs[k].data(), copying.outputs[k].data(), copying.outputs[k].bytes()), 0)
        << "output " << k << " differs from the copying plan's";
  }
}

// The same to float rounding (where the plans' kernels may differ).
void expect_close(const Ran& in_place, const Ran& copying) {
  ASSERT_EQ(in_place.outputs.size(), copying.outputs.size());
  ASSERT_FALSE(copying.outputs.empty());
  for (size_t k = 0; k < copying.outputs.size(); ++k) {
    ASSERT_EQ(in_place.outputs[k].shape(), copying.outputs[k].shape());
    const float* a = in_place.outputs[k].as<float>();
    const float* b = copying.outputs[k].as<float>();
    for (int64_t i = 0; i < copying.outputs[k].numel(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4f * (1.f + std::fabs(b[i]))) << "output " << k << " at " << i;
  }
}

// ---- float: YOLOv8's head tail, two scales (8x8 and 4x4), 4 box and 3 class channels.
void conv(OnnxBuilder& b, const std::string& x, const std::string& w, const std::string& y, std::vector<int64_t> wshape, int64_t stride) {
  b.random_initializer(w, wshape, -0.3f, 0.3f);
  auto* c = b.node("Conv", {x, w}, {y});
  OnnxBuilder::attr_ints(c, "pads", {wshape[2] / 2, wshape[2] / 2, wshape[2] / 2, wshape[2] / 2});
  OnnxBuilder::attr_ints(c, "strides", {stride, stride});
}

// `second_reader`: the Sigmoid's output is a graph output as well (read twice). `shape_reader`:
// the first scale's Reshape target comes from a Shape of its Concat, as exported YOLOv8 heads do.
std::string head_model(bool second_reader, bool shape_reader = false) {
  OnnxBuilder b;
  b.input("x", {1, 3, 16, 16});
  conv(b, "x", "w0", "p3", {8, 3, 3, 3}, 2);   // [1,8,8,8]
  conv(b, "p3", "w1", "p4", {8, 8, 3, 3}, 2);  // [1,8,4,4]
  std::vector<std::string> flat;
  for (const std::string p : {"p3", "p4"}) {
    conv(b, p, "wb_" + p, "box_" + p, {4, 8, 1, 1}, 1);
    conv(b, p, "wc_" + p, "cls_" + p, {3, 8, 1, 1}, 1);
    OnnxBuilder::attr_int(b.node("Concat", {"box_" + p, "cls_" + p}, {"cat_" + p}), "axis", 1);
    if (shape_reader && p == "p3") {  // [batch, 7, -1] with the batch read from the Concat's shape
      b.node("Shape", {"cat_" + p}, {"dims_" + p});
      b.initializer_i64("zero", {1}, {0});
      b.initializer_i64("one", {1}, {1});
      b.node("Slice", {"dims_" + p, "zero", "one"}, {"batch_" + p});
      b.initializer_i64("rest", {2}, {7, -1});
      OnnxBuilder::attr_int(b.node("Concat", {"batch_" + p, "rest"}, {"shape_" + p}), "axis", 0);
    } else {
      b.initializer_i64("shape_" + p, {3}, {1, 7, -1});
    }
    b.node("Reshape", {"cat_" + p, "shape_" + p}, {"flat_" + p});
    flat.push_back("flat_" + p);
  }
  OnnxBuilder::attr_int(b.node("Concat", flat, {"all"}), "axis", 2);  // [1,7,80]
  b.initializer_i64("split", {2}, {4, 3});
  OnnxBuilder::attr_int(b.node("Split", {"all", "split"}, {"box", "cls"}), "axis", 1);
  // The box arithmetic: two halves, their sum and difference, a Concat of those (contiguous at
  // batch 1), scaled.
  b.initializer_i64("split2", {2}, {2, 2});
  OnnxBuilder::attr_int(b.node("Split", {"box", "split2"}, {"lt", "rb"}), "axis", 1);
  b.node("Add", {"lt", "rb"}, {"sum"});
  b.node("Sub", {"rb", "lt"}, {"wh"});
  OnnxBuilder::attr_int(b.node("Concat", {"sum", "wh"}, {"xywh"}), "axis", 1);
  b.initializer("stride", {1, 1, 80}, std::vector<float>(80, 8.f));
  b.node("Mul", {"xywh", "stride"}, {"dbox"});
  b.node("Sigmoid", {"cls"}, {"score"});
  OnnxBuilder::attr_int(b.node("Concat", {"dbox", "score"}, {"y"}), "axis", 1);  // [1,7,80]
  b.output("y");
  if (second_reader) b.output("score");
  return b.bytes();
}

TEST(NativeEngineConcatInPlace, HeadTailIsTheCopyingPlansBitForBit) {
  const HostTensor x = image(16, -1.f, 1.f);
  // A Shape reads no data: with the Reshape target taken from one (the exported YOLOv8 head's
  // way), the plan is the same (it copied that scale into all's rows before).
  for (const bool shape_reader : {false, true}) {
    const std::string model = head_model(false, shape_reader);
    const Ran copying = run(model, x, false), in_place = run(model, x, true);
    expect_identical(in_place, copying);
    EXPECT_EQ(copying.concat_steps, 5) << shape_reader;
    // xywh and y: contiguous parts at batch 1, written by Add, Sub, Mul and Sigmoid; all: each
    // scale's layout conversion writes its channel planes into all's rows; the per scale Concats
    // (of convolutions with 4 and 3 output channels: oneDNN's, which write no wider rows) are
    // that conversion, each input transposed into its planes (ConcatPlanes): no Concat is left.
    EXPECT_EQ(in_place.concat_steps, 0) << shape_reader;
  }
}

// Per scale Concats converted to NCHW, at batch 2: read by nothing but a Reshape to a graph
// output (ConcatPlanes into a dense NCHW tensor), or through Reshapes into a Concat over the
// scales (ConcatPlanes into its rows, each batch's planes that far apart).
TEST(NativeEngineConcatInPlace, ChannelConcatsReadInNchwAreOnePass) {
  for (const bool over_scales : {false, true}) {
    OnnxBuilder b;
    b.input("x", {2, 3, 16, 16});
    conv(b, "x", "w0", "p3", {40, 3, 3, 3}, 2);   // [2,40,8,8]
    conv(b, "p3", "w1", "p4", {40, 40, 3, 3}, 2);  // [2,40,4,4]
    b.initializer_i64("shape", {3}, {2, 41, -1});
    std::vector<std::string> flat;
    for (const std::string p : {"p3", "p4"}) {
      conv(b, p, "wb_" + p, "box_" + p, {36, 40, 1, 1}, 1);  // more than one 32-channel tile
      conv(b, p, "wc_" + p, "cls_" + p, {5, 40, 1, 1}, 1);
      OnnxBuilder::attr_int(b.node("Concat", {"box_" + p, "cls_" + p}, {"cat_" + p}), "axis", 1);
      b.node("Reshape", {"cat_" + p, "shape"}, {"flat_" + p});
      flat.push_back("flat_" + p);
    }
    if (over_scales) {
      OnnxBuilder::attr_int(b.node("Concat", flat, {"y"}), "axis", 2);  // [2,41,80]
      b.output("y");
    } else {
      for (const auto& f : flat) b.output(f);
    }
    const std::string model = b.bytes();
    HostTensor x(DType::kFloat32, Shape{2, 3, 16, 16});
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
    const Ran copying = run(model, x, false), in_place = run(model, x, true);
    expect_identical(in_place, copying);
    EXPECT_EQ(copying.concat_steps, over_scales ? 3 : 2) << over_scales;
    EXPECT_EQ(in_place.concat_steps, 0) << over_scales;
  }
}

TEST(NativeEngineConcatInPlace, ContiguousPartReadTwiceStaysInPlace) {
  // The same bytes in the same place for both readers: the Sigmoid writes into y, the second
  // output is read from there.
  const std::string model = head_model(true);
  const HostTensor x = image(16, -1.f, 1.f);
  const Ran copying = run(model, x, false), in_place = run(model, x, true);
  ASSERT_EQ(in_place.outputs.size(), 2u);
  expect_identical(in_place, copying);
  EXPECT_EQ(in_place.concat_steps, 0);  // the per scale Concats as ConcatPlanes (above)
}

// ---- float: a C2f block whose bottleneck (3x3 convolutions, SiLU, the residual sum) runs on
// our Winograd kernel, a Concat of two more Winograd layers, and a nearest upsampling into a
// Concat. `second_reader`: the Winograd Concat's first input is a graph output too.
std::string c2f_model(bool second_reader) {
  OnnxBuilder b;
  b.input("x", {1, 3, 16, 16});
  auto conv_silu = [&](const std::string& x, const std::string& w, const std::string& y, std::vector<int64_t> wshape) {
    conv(b, x, w, y + "_c", wshape, 1);
    b.node("Sigmoid", {y + "_c"}, {y + "_s"});
    b.node("Mul", {y + "_c", y + "_s"}, {y});
  };
  conv_silu("x", "w0", "s0", {16, 3, 3, 3});
  conv_silu("s0", "w1", "a", {32, 16, 1, 1});
  b.initializer_i64("split", {2}, {16, 16});
  OnnxBuilder::attr_int(b.node("Split", {"a", "split"}, {"p0", "p1"}), "axis", 1);
  conv_silu("p1", "wm1", "m1", {16, 16, 3, 3});
  conv_silu("m1", "wm2", "m2", {16, 16, 3, 3});
  b.node("Add", {"p1", "m2"}, {"r"});  // fused into the convolution as its residual sum
  OnnxBuilder::attr_int(b.node("Concat", {"p0", "p1", "r"}, {"cat"}), "axis", 1);
  conv_silu("cat", "w2", "c2", {32, 48, 1, 1});
  conv_silu("c2", "w3", "u", {16, 32, 3, 3});
  conv_silu("c2", "w4", "v", {32, 32, 3, 3});
  OnnxBuilder::attr_int(b.node("Concat", {"u", "v"}, {"y"}), "axis", 1);
  // PAN-like: a downsampled branch upsampled (nearest) beside c2, which others read too.
  conv_silu("y", "w5", "d", {16, 48, 3, 3});
  auto* mp = b.node("MaxPool", {"d"}, {"dp"});  // 16x16 -> 8x8
  OnnxBuilder::attr_ints(mp, "kernel_shape", {2, 2});
  OnnxBuilder::attr_ints(mp, "strides", {2, 2});
  b.initializer("up_scales", {4}, {1.f, 1.f, 2.f, 2.f});
  b.node("Resize", {"dp", "", "up_scales"}, {"up"});
  OnnxBuilder::attr_int(b.node("Concat", {"up", "c2"}, {"pan"}), "axis", 1);
  b.output("y");
  b.output("pan");
  if (second_reader) b.output("u");
  return b.bytes();
}

TEST(NativeEngineConcatInPlace, WinogradOutputsAreTheCopyingPlansBitForBit) {
  const HostTensor x = image(16, -1.f, 1.f);
  for (const Conv3x3Choice choice : {Conv3x3Choice::kWinograd, Conv3x3Choice::kWinograd6x6}) {
    LoadOptions lo;
    lo.conv3x3 = choice;
    const std::string model = c2f_model(false);
    const Ran copying = run(model, x, false, lo), in_place = run(model, x, true, lo);
    expect_identical(in_place, copying);
    EXPECT_EQ(copying.concat_steps, 3);
    // y: both written by their Winograd layers; cat: the Split's input (a, a 1x1 convolution
    // with SiLU, our 1x1 kernel where the processor has AVX2, else oneDNN's and a step)
    // written into cat's rows, the parts read there (no Split step; the bottleneck reads p1
    // there as its source and residual sum), the bottleneck's sum written in place: no step; pan
    // copies c2, the upsampling writes in place.
    const int pointwise_copy = cpu::active_isa() >= cpu::Isa::kAvx2 ? 0 : 1;
    EXPECT_EQ(in_place.concat_steps, 1 + pointwise_copy);
    EXPECT_EQ(copying.split_steps, 1);
    EXPECT_EQ(in_place.split_steps, 0);
    const std::string again = c2f_model(true);  // u is an output too: copied, v in place
    const Ran copying2 = run(again, x, false, lo), in_place2 = run(again, x, true, lo);
    ASSERT_EQ(in_place2.outputs.size(), 3u);
    expect_identical(in_place2, copying2);
    EXPECT_EQ(in_place2.concat_steps, 2 + pointwise_copy);
  }
}

// A PAN-like neck: Concats along the channels whose one reader is a 1x1 convolution (our 1x1
// kernel where the processor has AVX2): no Concat step, the convolution reads the Concat's inputs
// where they stand (kSrcParts), the nearest 2x upsampling beside one of them read where its input
// stands (no Resize step); the tensor upsampled is read later again beside another (YOLOv8's p5).
// A convolution and its SiLU (YOLOv8's Conv block).
void conv_silu(OnnxBuilder& b, const std::string& x, const std::string& w, const std::string& y, std::vector<int64_t> wshape, int64_t stride) {
  conv(b, x, w, y + "_c", wshape, stride);
  b.node("Sigmoid", {y + "_c"}, {y + "_s"});
  b.node("Mul", {y + "_c", y + "_s"}, {y});
}

std::string neck_model() {
  OnnxBuilder b;
  b.input("x", {1, 3, 32, 32});
  conv_silu(b, "x", "w0", "p4", {16, 3, 3, 3}, 2);      // [1,16,16,16]
  conv_silu(b, "p4", "w1", "q5", {32, 16, 3, 3}, 2);    // [1,32,8,8]
  conv_silu(b, "q5", "w2", "p5", {32, 32, 1, 1}, 1);    // [1,32,8,8]: read by the upsampling and the last Concat
  b.initializer("up_scales", {4}, {1.f, 1.f, 2.f, 2.f});
  auto* up = b.node("Resize", {"p5", "", "up_scales"}, {"up"});
  OnnxBuilder::attr_string(up, "mode", "nearest");
  OnnxBuilder::attr_string(up, "coordinate_transformation_mode", "asymmetric");
  OnnxBuilder::attr_string(up, "nearest_mode", "floor");
  OnnxBuilder::attr_int(b.node("Concat", {"up", "p4"}, {"cat1"}), "axis", 1);
  conv_silu(b, "cat1", "w3", "n4", {16, 48, 1, 1}, 1);  // [1,16,16,16]
  conv_silu(b, "n4", "w4", "d", {16, 16, 3, 3}, 2);     // [1,16,8,8]
  OnnxBuilder::attr_int(b.node("Concat", {"d", "p5"}, {"cat2"}), "axis", 1);
  conv_silu(b, "cat2", "w5", "o5", {32, 48, 1, 1}, 1);  // [1,32,8,8]: a C2f's cv1, written into its Concat's rows
  b.initializer_i64("split", {2}, {16, 16});
  OnnxBuilder::attr_int(b.node("Split", {"o5", "split"}, {"s0", "s1"}), "axis", 1);
  conv_silu(b, "s1", "w6", "m", {16, 16, 3, 3}, 1);
  OnnxBuilder::attr_int(b.node("Concat", {"s0", "s1", "m"}, {"cat3"}), "axis", 1);
  conv_silu(b, "cat3", "w7", "c2", {32, 48, 1, 1}, 1);
  b.output("n4");
  b.output("c2");
  return b.bytes();
}

TEST(NativeEngineConcatInPlace, ConcatsReadByA1x1ConvolutionAreReadInPartsBitForBit) {
  const HostTensor x = image(32, -1.f, 1.f);
  const std::string model = neck_model();
  // Our kernels forced where they apply (no timing): the copying plan's 1x1 layers are ours too.
  // Float32, and bf16 tensors under --precision bf16 (our 1x1 kernel's bf16 variant on bf16 parts).
  for (const bool bf16 : {false, true}) {
    if (bf16 && cpu::active_isa() < cpu::Isa::kAvx512Bf16) continue;
    LoadOptions lo;
    lo.conv3x3 = Conv3x3Choice::kWinograd;
    if (bf16) lo.precision = Precision::kBf16;
    const Ran copying = run(model, x, false, lo), in_place = run(model, x, true, lo);
    expect_identical(in_place, copying);
    EXPECT_EQ(copying.concat_steps, 3) << "bf16 " << bf16;
    EXPECT_EQ(in_place.concat_steps, cpu::active_isa() >= cpu::Isa::kAvx2 ? 0 : 3) << "bf16 " << bf16;
  }
}

// The same upsampling beside a Split's parts whose input was made in the Concat's rows (C2f's
// cv1, preplace_in_concat): the Concat cannot be read in parts, so the upsampling gets its step
// after all (written into the Concat's rows), and the results are the copying plan's.
std::string upsampled_beside_preplaced_model() {
  OnnxBuilder b;
  b.input("x", {1, 3, 32, 32});
  conv_silu(b, "x", "w0", "p", {8, 3, 3, 3}, 2);     // [1,8,16,16]
  conv_silu(b, "p", "w1", "q", {16, 8, 3, 3}, 2);    // [1,16,8,8]
  b.initializer("up_scales", {4}, {1.f, 1.f, 2.f, 2.f});
  auto* up = b.node("Resize", {"q", "", "up_scales"}, {"up"});
  OnnxBuilder::attr_string(up, "mode", "nearest");
  conv_silu(b, "p", "w2", "a", {16, 8, 1, 1}, 1);    // [1,16,16,16], split in two
  b.initializer_i64("split", {2}, {8, 8});
  OnnxBuilder::attr_int(b.node("Split", {"a", "split"}, {"s0", "s1"}), "axis", 1);
  OnnxBuilder::attr_int(b.node("Concat", {"up", "s0", "s1"}, {"cat"}), "axis", 1);
  conv_silu(b, "cat", "w3", "y", {16, 32, 1, 1}, 1);
  b.output("y");
  return b.bytes();
}

TEST(NativeEngineConcatInPlace, UpsamplingBesideAConcatThatCannotBeReadInPartsIsMadeAfterAll) {
  const HostTensor x = image(32, -1.f, 1.f);
  const std::string model = upsampled_beside_preplaced_model();
  LoadOptions lo;
  lo.conv3x3 = Conv3x3Choice::kWinograd;
  const Ran copying = run(model, x, false, lo), in_place = run(model, x, true, lo);
  expect_identical(in_place, copying);
  EXPECT_EQ(copying.concat_steps, 1);
  EXPECT_EQ(in_place.concat_steps, 0);
}

// A float Split's parts read in its input by readers that cannot read them strided: a 1x1
// convolution (oneDNN's), a MaxPool and an elementwise Add get a dense copy each (one for both
// readers of a part), and the results are the copying plan's.
std::string split_other_readers_model() {
  OnnxBuilder b;
  b.input("x", {1, 3, 16, 16});
  conv(b, "x", "w0", "a", {32, 3, 3, 3}, 1);
  b.initializer_i64("split", {2}, {16, 16});
  OnnxBuilder::attr_int(b.node("Split", {"a", "split"}, {"p0", "p1"}), "axis", 1);
  conv(b, "p1", "w1", "m1", {16, 16, 3, 3}, 1);  // Winograd: reads p1 strided
  conv(b, "p0", "w2", "q", {16, 16, 1, 1}, 1);   // oneDNN 1x1: a dense copy of p0
  auto* mp = b.node("MaxPool", {"p0"}, {"pool"});  // the same dense copy
  OnnxBuilder::attr_ints(mp, "kernel_shape", {3, 3});
  OnnxBuilder::attr_ints(mp, "pads", {1, 1, 1, 1});
  b.node("Add", {"p1", "m1"}, {"r"});  // fused into m1's convolution: its sum read strided
  OnnxBuilder::attr_int(b.node("Concat", {"p0", "r", "q", "pool"}, {"cat"}), "axis", 1);
  b.output("cat");
  return b.bytes();
}

TEST(NativeEngineConcatInPlace, SplitPartsReadDenseWhereTheReaderCannotReadThemStrided) {
  const HostTensor x = image(16, -1.f, 1.f);
  for (const Conv3x3Choice choice : {Conv3x3Choice::kWinograd, Conv3x3Choice::kWinograd6x6}) {
    LoadOptions lo;
    lo.conv3x3 = choice;
    const std::string model = split_other_readers_model();
    const Ran copying = run(model, x, false, lo), in_place = run(model, x, true, lo);
    expect_identical(in_place, copying);
    EXPECT_EQ(copying.split_steps, 1);
    EXPECT_EQ(in_place.split_steps, 0);
    // One dense copy of p0 for the 1x1 convolution and the pool; none of p1.
    EXPECT_EQ(in_place.concat_steps, 1);
    EXPECT_EQ(in_place.dense_copies, 1);
  }
}

// The Split's input written into the Concat's rows after another input (its parts not first) by
// our 1x1 kernel, with or without an activation in its epilogue: the copying plan's results, and
// no Split or Concat step. Where oneDNN's convolution runs it (forced, or no AVX2 for ours) the
// parts stay in the convolution's own buffer and the Concat copies them.
std::string parts_after_another_model(bool activation) {
  OnnxBuilder b;
  b.input("x", {1, 16, 12, 12});
  b.random_initializer("w0", {32, 16, 1, 1}, -0.3f, 0.3f);
  b.node("Conv", {"x", "w0"}, {activation ? "a_c" : "a"});
  if (activation) {
    b.node("Sigmoid", {"a_c"}, {"a_s"});
    b.node("Mul", {"a_c", "a_s"}, {"a"});
  }
  b.initializer_i64("split", {2}, {16, 16});
  OnnxBuilder::attr_int(b.node("Split", {"a", "split"}, {"p0", "p1"}), "axis", 1);
  conv(b, "p1", "wm", "m", {16, 16, 3, 3}, 1);
  OnnxBuilder::attr_int(b.node("Concat", {"m", "p0", "p1"}, {"cat"}), "axis", 1);
  b.output("cat");
  return b.bytes();
}

TEST(NativeEngineConcatInPlace, SplitInputWrittenIntoTheConcatAfterAnotherInput) {
  HostTensor x(DType::kFloat32, Shape{1, 16, 12, 12});
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  const bool ours = cpu::active_isa() >= cpu::Isa::kAvx2;
  for (const Conv3x3Choice choice : {Conv3x3Choice::kWinograd, Conv3x3Choice::kOneDnn})
    for (const bool activation : {true, false}) {
      LoadOptions lo;
      lo.conv3x3 = choice;
      const std::string model = parts_after_another_model(activation);
      const Ran copying = run(model, x, false, lo), in_place = run(model, x, true, lo);
      const std::string what = std::string(activation ? "SiLU" : "no activation") + (choice == Conv3x3Choice::kOneDnn ? ", oneDNN" : ", ours");
      SCOPED_TRACE(what);
      if (choice == Conv3x3Choice::kOneDnn)
        expect_close(in_place, copying);  // the bottleneck reads p1 in place with our Winograd, not oneDNN's
      else
        expect_identical(in_place, copying);
      EXPECT_EQ(in_place.split_steps, 0) << what;
      EXPECT_EQ(in_place.concat_steps, ours && choice != Conv3x3Choice::kOneDnn ? 0 : 1) << what;
    }
}

// --precision bf16 plans place Concats and read Splits in place too (they were left copying):
// the float32 tensors between our kernels as in float32, the bf16 ones where their producers and
// readers take them. The copying plan's results bit for bit, with fewer Concat and Split steps.
TEST(NativeEngineConcatInPlace, Bf16PlansAreTheCopyingPlansBitForBit) {
  if (cpu::active_isa() < cpu::Isa::kAvx512Bf16) GTEST_SKIP() << "--precision bf16 needs avx512_bf16; this processor has " << cpu::isa_name(cpu::active_isa());
  const HostTensor x = image(16, -1.f, 1.f);
  // Every choice forced (no timing, whose answers the process remembers from other tests): our
  // Winograd on the 3x3 layers, oneDNN's bf16 convolution (candidate 0) on the others.
  for (const bool bf16_tensors : {true, false}) {
    LoadOptions lo;
    lo.precision = Precision::kBf16;
    lo.conv3x3 = Conv3x3Choice::kWinograd;
    lo.conv_candidate = 0;
    lo.bf16_tensors = bf16_tensors;
    const std::string model = c2f_model(false);
    const Ran copying = run(model, x, false, lo), in_place = run(model, x, true, lo);
    expect_identical(in_place, copying);
    EXPECT_LT(in_place.concat_steps + in_place.split_steps, copying.concat_steps + copying.split_steps) << bf16_tensors;
  }
}

// With the implementations timed at load (no forced choice), the plans may pick different ones
// for the bottleneck (our F(4x4) or F(6x6), or oneDNN's where the part is dense): the same
// results to float rounding.
TEST(NativeEngineConcatInPlace, SplitPartsReadInPlaceWithTimedChoicesGiveTheCopyingPlansResults) {
  const HostTensor x = image(16, -1.f, 1.f);
  const std::string model = c2f_model(false);
  expect_close(run(model, x, true), run(model, x, false));
}

// ---- int8: QDQ as `streamdet quantize` writes it (qdq_model_builder.h).
using Qdq = test::QdqModelBuilder;

// A C2f block (Split, a bottleneck with its residual Add, Concat of three), an SPPF-like Concat
// (a SiLU beside two MaxPools of it), a PAN-like Concat (an upsampling beside a downsampled
// branch) and a quantized output. `second_reader`: a QuantizeLinear feeding the SPPF Concat is
// also dequantized into a second output (read twice: copied, not strided).
std::string qdq_model(bool second_reader) {
  Qdq m;
  OnnxBuilder& b = m.b;
  b.input("x", {1, 3, 16, 16});
  const std::string y = m.conv_silu(m.quantize("x", 1.f / 255.f, 0), 1.f / 255.f, 0, 3, 16, 3, 0.04f, 40);
  b.initializer_i64("split", {2}, {8, 8});
  OnnxBuilder::attr_int(b.node("Split", {y, "split"}, {"y0", "y1"}), "axis", 1);
  const std::string z = m.conv_silu(m.quantize("y1", 0.03f, 12), 0.03f, 12, 8, 8, 3, 0.05f, 60);
  b.node("Add", {"y1", z}, {"w"});
  const std::string cq = m.quantize("w", 0.045f, 15);  // the C2f Concat reads one quantized tensor
  const std::string cat_in[3] = {m.quantize("y0", 0.045f, 15), m.quantize("y1", 0.045f, 15), cq};
  OnnxBuilder::attr_int(b.node("Concat", {cat_in[0], cat_in[1], cat_in[2]}, {"cat"}), "axis", 1);
  const std::string c = m.conv_silu("cat", 0.045f, 15, 24, 16, 1, 0.04f, 30);
  // SPPF-like: c and two float MaxPools, each quantized to the Concat's scale.
  auto pool = [&](const std::string& in, const std::string& out) {
    auto* mp = b.node("MaxPool", {in}, {out});
    OnnxBuilder::attr_ints(mp, "kernel_shape", {3, 3});
    OnnxBuilder::attr_ints(mp, "pads", {1, 1, 1, 1});
  };
  pool(c, "mp1");
  pool("mp1", "mp2");
  const std::string q_mp2 = m.quantize("mp2", 0.05f, 12);
  OnnxBuilder::attr_int(b.node("Concat", {m.quantize(c, 0.05f, 12), m.quantize("mp1", 0.05f, 12), q_mp2}, {"cat2"}), "axis", 1);
  const std::string s = m.conv_silu("cat2", 0.05f, 12, 48, 16, 1, 0.05f, 50);
  // PAN-like: a downsampled branch, upsampled again beside the SPPF's output.
  const std::string dn = m.conv_silu(m.quantize(s, 0.05f, 50), 0.05f, 50, 16, 8, 3, 0.04f, 20, 2);
  b.initializer("scales", {4}, {1.f, 1.f, 2.f, 2.f});
  b.node("Resize", {dn, "", "scales"}, {"up"});
  OnnxBuilder::attr_int(b.node("Concat", {m.quantize("up", 0.05f, 30), m.quantize(s, 0.05f, 30)}, {"cat3"}), "axis", 1);
  const std::string c3 = m.conv_silu("cat3", 0.05f, 30, 24, 8, 1, 0.05f, 50);
  // A neck-like C2f without a shortcut: the Split's parts read only by the Concat's byte tables
  // (which read them in the Split's input), taken in the other order.
  b.initializer_i64("split4", {2}, {4, 4});
  OnnxBuilder::attr_int(b.node("Split", {c3, "split4"}, {"h0", "h1"}), "axis", 1);
  OnnxBuilder::attr_int(b.node("Concat", {m.quantize("h1", 0.06f, 40), m.quantize("h0", 0.06f, 40)}, {"cat4"}), "axis", 1);
  const std::string out = m.conv_silu("cat4", 0.06f, 40, 8, 8, 1, 0.05f, 50);
  b.node("Identity", {m.dequantize(m.quantize(out, 0.05f, 20), 0.05f, 20)}, {"out"});
  b.output("out");
  if (second_reader) {
    b.node("Identity", {m.dequantize(q_mp2, 0.05f, 12)}, {"mp2_again"});
    b.output("mp2_again");
  }
  return b.bytes();
}

TEST(NativeEngineConcatInPlace, Int8ConcatsAreTheCopyingPlansBitForBit) {
  const std::string model = qdq_model(false);
  const HostTensor x = image(16, 0.f, 1.f);
  const Ran copying = run(model, x, false), in_place = run(model, x, true);
  expect_identical(in_place, copying);
  EXPECT_EQ(copying.concat_steps, 4);
  // Every input of the four Concats is written strided by its byte table, sum or quantization.
  EXPECT_EQ(in_place.concat_steps, 0);
  // Both Splits' parts are read in their inputs: the neck-like one's by byte tables, the first
  // C2f's also by the residual Int8AddTables (its second part is the sum's operand).
  EXPECT_EQ(copying.split_steps, 2);
  EXPECT_EQ(in_place.split_steps, 0);
}

TEST(NativeEngineConcatInPlace, Int8InputReadTwiceIsCopied) {
  const std::string model = qdq_model(true);
  const HostTensor x = image(16, 0.f, 1.f);
  const Ran copying = run(model, x, false), in_place = run(model, x, true);
  ASSERT_EQ(in_place.outputs.size(), 2u);
  expect_identical(in_place, copying);
  EXPECT_EQ(copying.concat_steps, 4);
  EXPECT_EQ(in_place.concat_steps, 1);  // the SPPF Concat copies the MaxPool's quantized bytes
}

// The byte table's strided rows (an Int8Table reading a Split's part in its input and writing
// into a Concat's channels), each variant against the plain lookup row by row; the bytes
// between rows are left alone.
TEST(NativeEngineConcatInPlace, StridedByteTableRowsMatchThePlainLookup) {
  std::mt19937 rng(5);
  std::vector<uint8_t> table(256), x(3 * 210);
  for (auto& v : table) v = static_cast<uint8_t>(rng());
  for (auto& v : x) v = static_cast<uint8_t>(rng());
  std::vector<std::pair<std::string, ops::byte_table::LookupRowsFn>> variants{{"baseline", ops::byte_table::lookup_rows_baseline}};
#if defined(__x86_64__)
  if (cpu::detected_isa() >= cpu::Isa::kAvx512) variants.emplace_back("avx512_bw", ops::byte_table::lookup_rows_avx512_bw);
  if (cpu::detected_isa() >= cpu::Isa::kAvx512 && ops::byte_table::has_vbmi())
    variants.emplace_back("avx512_vbmi", ops::byte_table::lookup_rows_avx512_vbmi);
  if (cpu::detected_isa() >= cpu::Isa::kAvx2) variants.emplace_back("avx2", ops::byte_table::lookup_rows_avx2);
#endif
  for (const auto& [name, fn] : variants)
    for (int64_t c : {1, 16, 24, 31, 32, 33, 63, 64, 80, 130, 200}) {
      const int64_t stride = c + 7, x_stride = c + 3, rows = 3;  // both strided
      std::vector<uint8_t> got(static_cast<size_t>(rows * stride), 0xAB);
      fn(x.data(), x_stride, got.data(), stride, rows, c, table.data());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < stride; ++i) {
          const uint8_t want = i < c ? table[x[static_cast<size_t>(r * x_stride + i)]] : 0xAB;
          ASSERT_EQ(got[static_cast<size_t>(r * stride + i)], want) << name << " c=" << c << " row " << r << " byte " << i;
        }
    }
}

}  // namespace
}  // namespace sd::native
