// The native engine against naive references: convolutions (every geometry, fused activations and
// residual sums), pooling, the channels-last layout logic, the graph passes, the memory planner
// (shared arena, no allocation per run), dynamic input sizes, and the vectorized exp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <array>
#include <numeric>
#include <random>
#include <thread>

#include "engine/native/cpu/weight_cache.h"
#include "engine/native/cpu/activation_kernels.h"
#include "engine/native/cpu/fast_math.h"
#include "engine/native/numeric.h"
#include "engine/native/session.h"
#include "onnx_builder.h"

namespace sd::testing {
int64_t allocation_count();  // tests/postprocessor_test.cpp: every operator new of the process; -1 under sanitizers
}

namespace sd::native {
namespace {

using test::OnnxBuilder;

std::vector<float> random_vector(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

struct RunResult {
  std::vector<HostTensor> outputs;
  std::shared_ptr<const NativeModel> model;
};

RunResult run_model(const std::string& bytes, const std::vector<HostTensor>& inputs, bool optimize = true, bool channels_last = true,
                    int threads = 2) {
  LoadOptions lo;
  lo.optimize = optimize;
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", lo);
  EXPECT_TRUE(m) << (m ? "" : m.error().message);
  if (!m) return {};
  SessionOptions so;
  so.threads = threads;
  so.channels_last = channels_last;
  auto s = NativeSession::create(*m, so);
  std::vector<TensorRef> refs;
  for (const auto& t : inputs) refs.push_back(t.ref());
  RunResult r;
  r.model = *m;
  auto st = (*s)->run(refs, r.outputs);
  EXPECT_TRUE(st) << (st ? "" : st.error().message);
  return r;
}

HostTensor tensor(const Shape& shape, const std::vector<float>& v) {
  HostTensor t(DType::kFloat32, shape);
  std::copy(v.begin(), v.end(), t.as<float>());
  return t;
}

void expect_close(const HostTensor& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got.as<float>()[i] - want[i]) / (1.0 + std::fabs(want[i])));
  EXPECT_LT(worst, tol) << what;
}

void expect_same(const HostTensor& a, const HostTensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  std::vector<double> w(static_cast<size_t>(b.numel()));
  for (size_t i = 0; i < w.size(); ++i) w[i] = b.as<float>()[i];
  expect_close(a, w, tol, what);
}

// ---------------------------------------------------------------- naive references
struct ConvCase {
  int n, c, h, w, oc, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, group;
};

std::vector<double> naive_conv(const ConvCase& k, const std::vector<float>& x, const std::vector<float>& wt, const std::vector<float>& b,
                               int& oh, int& ow) {
  oh = (k.h + k.pt + k.pb - ((k.kh - 1) * k.dh + 1)) / k.sh + 1;
  ow = (k.w + k.pl + k.pr - ((k.kw - 1) * k.dw + 1)) / k.sw + 1;
  const int icg = k.c / k.group, ocg = k.oc / k.group;
  std::vector<double> y(static_cast<size_t>(k.n * k.oc * oh * ow));
  for (int n = 0; n < k.n; ++n)
    for (int o = 0; o < k.oc; ++o)
      for (int yy = 0; yy < oh; ++yy)
        for (int xx = 0; xx < ow; ++xx) {
          double acc = b.empty() ? 0 : b[static_cast<size_t>(o)];
          const int g = o / ocg;
          for (int ci = 0; ci < icg; ++ci)
            for (int ky = 0; ky < k.kh; ++ky)
              for (int kx = 0; kx < k.kw; ++kx) {
                int iy = yy * k.sh - k.pt + ky * k.dh, ix = xx * k.sw - k.pl + kx * k.dw;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                acc += static_cast<double>(x[static_cast<size_t>(((n * k.c + g * icg + ci) * k.h + iy) * k.w + ix)]) *
                       wt[static_cast<size_t>(((o * icg + ci) * k.kh + ky) * k.kw + kx)];
              }
          y[static_cast<size_t>(((n * k.oc + o) * oh + yy) * ow + xx)] = acc;
        }
  return y;
}

class ConvVsNaive : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvVsNaive, MatchesInEveryLayout) {
  const ConvCase k = GetParam();
  OnnxBuilder b;
  b.input("x", {k.n, k.c, k.h, k.w});
  auto wt = b.random_initializer("w", {k.oc, k.c / k.group, k.kh, k.kw}, -0.5f, 0.5f);
  auto bias = b.random_initializer("b", {k.oc}, -0.5f, 0.5f);
  auto* conv = b.node("Conv", {"x", "w", "b"}, {"y"});
  OnnxBuilder::attr_ints(conv, "kernel_shape", {k.kh, k.kw});
  OnnxBuilder::attr_ints(conv, "strides", {k.sh, k.sw});
  OnnxBuilder::attr_ints(conv, "pads", {k.pt, k.pl, k.pb, k.pr});
  OnnxBuilder::attr_ints(conv, "dilations", {k.dh, k.dw});
  OnnxBuilder::attr_int(conv, "group", k.group);
  b.output("y");
  auto xv = random_vector(static_cast<size_t>(k.n * k.c * k.h * k.w), 11);
  int oh = 0, ow = 0;
  auto want = naive_conv(k, xv, wt, bias, oh, ow);
  HostTensor x = tensor(Shape{k.n, k.c, k.h, k.w}, xv);
  for (bool cl : {true, false}) {
    auto r = run_model(b.bytes(), {x}, true, cl);
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_EQ(r.outputs[0].shape(), (Shape{k.n, k.oc, oh, ow}));
    expect_close(r.outputs[0], want, 1e-4, cl ? "channels-last" : "plain");
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, ConvVsNaive,
                         ::testing::Values(ConvCase{1, 3, 17, 23, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},    // stem
                                           ConvCase{1, 16, 12, 12, 32, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},   // pointwise
                                           ConvCase{2, 8, 9, 11, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8},      // depthwise, batch 2
                                           ConvCase{1, 12, 10, 10, 6, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 3},    // grouped, dilated
                                           ConvCase{1, 5, 8, 13, 7, 5, 3, 2, 1, 0, 2, 1, 0, 1, 1, 1},      // odd kernel, asymmetric pads
                                           ConvCase{1, 32, 19, 21, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  // Winograd F(4x4,3x3), ragged tiles
                                           ConvCase{2, 64, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   // Winograd, batch 2
                                           // The stem kernel (1 to 4 input channels): YOLOv5's 6x6/2, 7x7/2, widths
                                           // that are not whole blocks of 16, stride 1, 1x1, batch 2, rows long enough
                                           // for the 12-pixel blocks and their borders, asymmetric pads.
                                           ConvCase{1, 3, 40, 52, 32, 6, 6, 2, 2, 2, 2, 2, 2, 1, 1, 1},
                                           ConvCase{1, 3, 37, 41, 24, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1},
                                           ConvCase{2, 1, 20, 35, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                                           ConvCase{1, 3, 33, 46, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},   // 8 outputs: 8-lane vectors
                                           ConvCase{1, 4, 18, 33, 40, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
                                           ConvCase{1, 3, 21, 30, 16, 5, 4, 3, 2, 0, 1, 2, 3, 1, 1, 1},
                                           ConvCase{1, 2, 5, 6, 16, 3, 3, 1, 1, 2, 4, 1, 4, 1, 1, 1},  // no interior at all
                                           // The same kernel on 8 -> 8 channel 3x3 stride-1 layers read channels-last:
                                           // two 12-pixel blocks and a remainder; batch 2 with asymmetric pads.
                                           ConvCase{1, 8, 13, 31, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                                           ConvCase{2, 8, 6, 17, 8, 3, 3, 1, 1, 0, 2, 2, 0, 1, 1, 1}));

// The stem kernel with each activation fused into it (in registers), against the unoptimized
// plain graph (Conv, then the activation as its own op); and with a channels-last source (a
// convolution producing 4 channels feeds it).
TEST(NativeEngine, StemConvWithFusedActivationsMatchesThePlainGraph) {
  struct Act {
    const char* op;
    float min, max;
  };
  // 24 outputs: 16-lane blocks, the second one partial; 8 outputs: one 8-lane block.
  for (const int64_t oc : {24, 8})
  for (const Act act : {Act{"Relu", 0, 0}, Act{"LeakyRelu", 0, 0}, Act{"Sigmoid", 0, 0}, Act{"HardSwish", 0, 0}, Act{"Clip", -0.3f, 0.4f},
                        Act{"SiLU", 0, 0}, Act{"Relu+Sigmoid", 0, 0}}) {
    OnnxBuilder b;
    b.input("x", {1, 3, 23, 37});
    b.random_initializer("w", {oc, 3, 3, 3}, -0.5f, 0.5f);
    b.random_initializer("b", {oc}, -0.5f, 0.5f);
    b.random_initializer("w2", {4, oc, 1, 1}, -0.5f, 0.5f);
    b.random_initializer("w3", {16, 4, 3, 3}, -0.5f, 0.5f);
    b.initializer("lo", {}, {act.min});
    b.initializer("hi", {}, {act.max});
    auto* conv = b.node("Conv", {"x", "w", "b"}, {"c"});
    OnnxBuilder::attr_ints(conv, "strides", {2, 2});
    OnnxBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
    const std::string name = act.op;
    if (name == "SiLU") {
      b.node("Sigmoid", {"c"}, {"s"});
      b.node("Mul", {"c", "s"}, {"a"});
    } else if (name == "Clip") {
      b.node("Clip", {"c", "lo", "hi"}, {"a"});
    } else if (name == "Relu+Sigmoid") {  // two post ops: the kernel applies them per finished row
      b.node("Relu", {"c"}, {"r"});
      b.node("Sigmoid", {"r"}, {"a"});
    } else {
      auto* n = b.node(name, {"c"}, {"a"});
      if (name == "LeakyRelu") OnnxBuilder::attr_float(n, "alpha", 0.2f);
    }
    b.node("Conv", {"a", "w2"}, {"four"});  // 4 channels, channels-last: the next stem reads NHWC
    auto* c3 = b.node("Conv", {"four", "w3"}, {"y"});
    OnnxBuilder::attr_ints(c3, "pads", {1, 1, 1, 1});
    b.output("a");
    b.output("y");
    HostTensor x = tensor(Shape{1, 3, 23, 37}, random_vector(3 * 23 * 37, 5, -3.f, 3.f));
    auto fast = run_model(b.bytes(), {x}, true, true);
    auto plain = run_model(b.bytes(), {x}, false, false);
    ASSERT_EQ(fast.outputs.size(), 2u) << name;
    ASSERT_EQ(plain.outputs.size(), 2u) << name;
    expect_same(fast.outputs[0], plain.outputs[0], 1e-5, name + ": activation");
    expect_same(fast.outputs[1], plain.outputs[1], 1e-4, name + ": after the channels-last stem");
  }
}

// A C2f-like block: Conv+BN+SiLU, a residual Add after the activation, Split/Concat along channels,
// a per-channel scale, nearest 2x upsample, MaxPool, Slice, then a reshape to 3-D: the layout
// logic (channels-last between convolutions) and the passes (BN fold, SiLU and sum fusion) must
// give the plain, unoptimized graph's results.
std::string c2f_like_model(bool dynamic) {
  OnnxBuilder b;
  const int64_t d = dynamic ? -1 : 16;
  b.input("x", {1, 8, d, d});
  b.random_initializer("w1", {16, 8, 3, 3}, -0.3f, 0.3f);
  b.random_initializer("w2", {8, 8, 3, 3}, -0.3f, 0.3f);
  b.random_initializer("w3", {24, 24, 1, 1}, -0.3f, 0.3f);
  b.random_initializer("bn_s", {8}, 0.5f, 1.5f);
  b.random_initializer("bn_b", {8}, -0.2f, 0.2f);
  b.random_initializer("bn_m", {8}, -0.2f, 0.2f);
  b.random_initializer("bn_v", {8}, 0.5f, 1.5f);
  b.random_initializer("chan_scale", {1, 24, 1, 1}, 0.5f, 1.5f);
  b.initializer_i64("split", {2}, {8, 8});
  b.initializer_i64("starts", {1}, {2});
  b.initializer_i64("ends", {1}, {20});
  b.initializer_i64("axes", {1}, {1});
  b.initializer("scales", {4}, {1.f, 1.f, 2.f, 2.f});
  b.initializer_i64("shape3", {3}, {1, 18, -1});
  auto* c1 = b.node("Conv", {"x", "w1"}, {"c1"});
  OnnxBuilder::attr_ints(c1, "pads", {1, 1, 1, 1});
  b.node("Sigmoid", {"c1"}, {"s1"});
  b.node("Mul", {"c1", "s1"}, {"a1"});
  auto* sp = b.node("Split", {"a1", "split"}, {"p0", "p1"});
  OnnxBuilder::attr_int(sp, "axis", 1);
  auto* c2 = b.node("Conv", {"p1", "w2"}, {"c2"});
  OnnxBuilder::attr_ints(c2, "pads", {1, 1, 1, 1});
  b.node("BatchNormalization", {"c2", "bn_s", "bn_b", "bn_m", "bn_v"}, {"bn"});
  b.node("Sigmoid", {"bn"}, {"s2"});
  b.node("Mul", {"bn", "s2"}, {"a2"});
  b.node("Add", {"p1", "a2"}, {"res"});
  auto* cat = b.node("Concat", {"p0", "p1", "res"}, {"cat"});
  OnnxBuilder::attr_int(cat, "axis", 1);
  b.node("Mul", {"cat", "chan_scale"}, {"scaled"});
  b.node("Conv", {"scaled", "w3"}, {"c3"});
  b.node("Relu", {"c3"}, {"r3"});
  auto* mp = b.node("MaxPool", {"r3"}, {"mp"});
  OnnxBuilder::attr_ints(mp, "kernel_shape", {5, 5});
  OnnxBuilder::attr_ints(mp, "pads", {2, 2, 2, 2});
  b.node("Resize", {"mp", "", "scales"}, {"up"});
  b.node("Slice", {"up", "starts", "ends", "axes"}, {"sl"});
  b.node("Reshape", {"sl", "shape3"}, {"y"});
  b.output("y");
  b.output("res");
  return b.bytes();
}

TEST(NativeEngine, LayoutsAndPassesGiveThePlainGraphsResults) {
  const std::string model = c2f_like_model(false);
  HostTensor x = tensor(Shape{1, 8, 16, 16}, random_vector(8 * 16 * 16, 5));
  auto reference = run_model(model, {x}, /*optimize=*/false, /*channels_last=*/false);
  auto fast = run_model(model, {x}, true, true);
  ASSERT_EQ(reference.outputs.size(), 2u);
  ASSERT_EQ(fast.outputs.size(), 2u);
  EXPECT_EQ(fast.outputs[0].shape(), (Shape{1, 18, 32 * 32}));
  expect_same(fast.outputs[0], reference.outputs[0], 1e-4, "y");
  expect_same(fast.outputs[1], reference.outputs[1], 1e-4, "res");
  for (bool cl : {true, false}) {
    auto r = run_model(model, {x}, true, cl);
    expect_same(r.outputs[0], reference.outputs[0], 1e-4, cl ? "optimized, channels-last" : "optimized, plain");
  }
  // What the passes did: BN folded, both SiLUs fused, the residual sum fused after the activation.
  const Graph& g = fast.model->graph();
  int fused = 0, silu_sum = 0;
  for (const Node& n : g.nodes) {
    EXPECT_NE(n.op_type, "BatchNormalization");
    EXPECT_NE(n.op_type, "Sigmoid");
    if (n.op_type == "FusedConv") {
      ++fused;
      if (n.attrs.get_strings_or_empty("post_ops") == std::vector<std::string>{"silu", "sum"}) ++silu_sum;
    }
  }
  EXPECT_EQ(fused, 3);  // c1 + SiLU, c2 + BN + SiLU + residual, c3 + Relu
  EXPECT_EQ(silu_sum, 1);
}

// YOLOv8's DFL box decoding as the two exports write it: opset 12 (Softmax over the last axis
// only, so transposes around it) and opset 17 (Softmax over axis 1). The pass makes one
// BinExpectation node of it; the results are the plain graph's, for 70 anchors (four 16-anchor
// vectors and a scalar tail), batch 2, bin values that are not 0..15 and a bias.
std::string dfl_model(int opset, bool bias, bool softmax_also_an_output) {
  OnnxBuilder b(opset);
  b.input("x", {2, 64, 70});
  b.initializer_i64("shape4", {4}, {2, 4, 16, 70});
  b.initializer_i64("shape3", {3}, {2, 4, 70});
  b.random_initializer("w", {1, 16, 1, 1}, -2.f, 3.f);
  if (bias) b.random_initializer("b", {1}, -1.f, 1.f);
  b.node("Reshape", {"x", "shape4"}, {"r"});
  std::string soft = "sm";
  if (opset < 13) {
    OnnxBuilder::attr_ints(b.node("Transpose", {"r"}, {"t0"}), "perm", {0, 3, 1, 2});  // [n, a, s, k]
    OnnxBuilder::attr_int(b.node("Softmax", {"t0"}, {"sm"}), "axis", 3);
    OnnxBuilder::attr_ints(b.node("Transpose", {"sm"}, {"t1"}), "perm", {0, 3, 2, 1});  // [n, k, s, a]
  } else {
    OnnxBuilder::attr_ints(b.node("Transpose", {"r"}, {"t0"}), "perm", {0, 2, 1, 3});  // [n, k, s, a]
    OnnxBuilder::attr_int(b.node("Softmax", {"t0"}, {"t1"}), "axis", 1);
    soft = "t1";
  }
  if (bias) b.node("Conv", {"t1", "w", "b"}, {"c"});
  else b.node("Conv", {"t1", "w"}, {"c"});
  b.node("Reshape", {"c", "shape3"}, {"y"});
  b.output("y");
  if (softmax_also_an_output) b.output(soft);
  return b.bytes();
}

TEST(NativeEngine, DflDecodingIsOneNodeWithThePlainGraphsResults) {
  HostTensor x = tensor(Shape{2, 64, 70}, random_vector(2 * 64 * 70, 8, -6.f, 6.f));
  for (int opset : {12, 17})
    for (bool bias : {false, true})
      for (bool shared : {false, true}) {
        const std::string what = "opset " + std::to_string(opset) + (bias ? ", bias" : "") + (shared ? ", softmax also an output" : "");
        const std::string model = dfl_model(opset, bias, shared);
        auto plain = run_model(model, {x}, false, false);
        auto fast = run_model(model, {x}, true, true);
        ASSERT_EQ(fast.outputs.size(), plain.outputs.size()) << what;
        for (size_t i = 0; i < plain.outputs.size(); ++i) expect_same(fast.outputs[i], plain.outputs[i], 1e-5, what);
        int fused = 0, softmax = 0;
        for (const Node& n : fast.model->graph().nodes) {
          fused += n.op_type == "BinExpectation";
          softmax += n.op_type == "Softmax";
        }
        // A softmax something else reads stays as it is.
        EXPECT_EQ(fused, shared ? 0 : 1) << what;
        EXPECT_EQ(softmax, shared ? 1 : 0) << what;
      }
}

TEST(NativeEngine, DynamicSizesArePlannedPerShape) {
  const std::string model = c2f_like_model(true);
  LoadOptions lo;
  auto m = NativeModel::load_from_bytes(model.data(), model.size(), ".", lo);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ((*m)->inputs()[0].shape, (Shape{1, 8, -1, -1}));
  auto s = NativeSession::create(*m, SessionOptions{2});
  for (int size : {16, 24, 16}) {
    HostTensor x = tensor(Shape{1, 8, size, size}, random_vector(static_cast<size_t>(8 * size * size), 9));
    std::vector<HostTensor> out;
    TensorRef ref = x.ref();
    ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&ref, 1), out));
    EXPECT_EQ(out[0].shape(), (Shape{1, 18, 4 * size * size}));
    auto plain = run_model(model, {x}, false, false);
    expect_same(out[0], plain.outputs[0], 1e-4, "size " + std::to_string(size));
  }
}

// Several inference workers over one model share its reordered convolution weights: the second
// session reorders nothing, and gives the same results. A model loaded after the first is freed
// gets its own weights (an address reused by the allocator never matches a stale entry).
TEST(NativeEngine, ReorderedWeightsAreSharedBetweenSessions) {
  const std::string model = c2f_like_model(true);
  HostTensor x = tensor(Shape{1, 8, 16, 16}, random_vector(8 * 16 * 16, 21));
  TensorRef ref = x.ref();
  auto plain = run_model(model, {x}, false, false);
  // oneDNN's convolutions on every node: our own kernels (the 1x1 one, timed against oneDNN's
  // where the processor has AVX2) pack their weights per kernel.
  LoadOptions lo;
  lo.conv3x3 = Conv3x3Choice::kOneDnn;
  for (int round = 0; round < 2; ++round) {
    auto m = NativeModel::load_from_bytes(model.data(), model.size(), ".", lo);
    ASSERT_TRUE(m) << m.error().message;
    auto first = NativeSession::create(*m, SessionOptions{2});
    auto second = NativeSession::create(*m, SessionOptions{2});
    std::vector<HostTensor> out_first, out_second;
    const size_t before = dnnl_ops::weight_reorders_done();
    ASSERT_TRUE((*first)->run(std::span<const TensorRef>(&ref, 1), out_first));
    const size_t after_first = dnnl_ops::weight_reorders_done();
    // c1 and c3; c2 (8 -> 8 channels, 3x3) runs on the direct kernel, which packs its small
    // weights itself.
    EXPECT_EQ(after_first - before, 2u) << "round " << round << ": one reorder per oneDNN convolution";
    ASSERT_TRUE((*second)->run(std::span<const TensorRef>(&ref, 1), out_second));
    EXPECT_EQ(dnnl_ops::weight_reorders_done(), after_first) << "round " << round << ": the second session shares them";
    expect_same(out_first[0], plain.outputs[0], 1e-4, "first session");
    expect_same(out_second[0], out_first[0], 1e-7, "second session");
  }
}

// A YOLO bottleneck at Winograd-eligible widths: 3x3 stride-1 convs, 32 channels, SiLU (as
// Sigmoid*x) and a residual Add, fused into the Winograd path's own post ops: the same results as
// the plain graph. Run on threads other than the one that loaded the model, as a pipeline
// worker does, with two sessions at once.
std::string winograd_bottleneck_model(int64_t n, int64_t c, int64_t h, int64_t w) {
  OnnxBuilder b;
  b.input("x", {n, c, h, w});
  b.random_initializer("w1", {c, c, 3, 3}, -0.1f, 0.1f);
  b.random_initializer("b1", {c}, -0.1f, 0.1f);
  b.random_initializer("w2", {c, c, 3, 3}, -0.1f, 0.1f);
  b.random_initializer("b2", {c}, -0.1f, 0.1f);
  auto* c1 = b.node("Conv", {"x", "w1", "b1"}, {"c1"});
  OnnxBuilder::attr_ints(c1, "pads", {1, 1, 1, 1});
  b.node("Sigmoid", {"c1"}, {"s1"});
  b.node("Mul", {"c1", "s1"}, {"a1"});
  auto* c2 = b.node("Conv", {"a1", "w2", "b2"}, {"c2"});
  OnnxBuilder::attr_ints(c2, "pads", {1, 1, 1, 1});
  b.node("Sigmoid", {"c2"}, {"s2"});
  b.node("Mul", {"c2", "s2"}, {"a2"});
  b.node("Add", {"a1", "a2"}, {"y"});
  b.output("y");
  return b.bytes();
}

class WinogradBottleneck : public ::testing::TestWithParam<std::array<int64_t, 4>> {};

// oneDNN picks jit_fp32_wino_2x3 for the first shapes and jit_wino_4x3 for the last (YOLOv8n's
// 20x20 stage): both kernels are covered, and the unblocking of their nChw16c results with the
// post ops (SiLU, then the residual sum) row by row, also for a batch of 2 and 48 channels.
INSTANTIATE_TEST_SUITE_P(Kernels, WinogradBottleneck,
                         ::testing::Values(std::array<int64_t, 4>{1, 32, 24, 20}, std::array<int64_t, 4>{2, 48, 9, 13},
                                           std::array<int64_t, 4>{1, 128, 20, 20}));

TEST_P(WinogradBottleneck, FusedPostOpsOnWorkerThreadsMatchThePlainGraph) {
  const auto [n, c, h, w] = GetParam();
  const std::string model = winograd_bottleneck_model(n, c, h, w);
  HostTensor x = tensor(Shape{n, c, h, w}, random_vector(static_cast<size_t>(n * c * h * w), 17));
  auto plain = run_model(model, {x}, false, false);
  auto m = NativeModel::load_from_bytes(model.data(), model.size(), ".");
  ASSERT_TRUE(m) << m.error().message;
  // Planned and run first on this thread (as the detector's probe), then run by a worker thread
  // (as pipeline worker 0 does with the probe's context) while a second worker runs a session of
  // its own.
  auto probe = NativeSession::create(*m, SessionOptions{2});
  {
    std::vector<HostTensor> out;
    TensorRef ref = x.ref();
    ASSERT_TRUE((*probe)->run(std::span<const TensorRef>(&ref, 1), out));
    expect_same(out[0], plain.outputs[0], 1e-4, "loading thread");
  }
  std::vector<HostTensor> outs[2];
  Status statuses[2] = {ok(), ok()};
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w)
    workers.emplace_back([&, w] {
      auto own = w == 0 ? nullptr : std::move(*NativeSession::create(*m, SessionOptions{2}));
      NativeSession& s = w == 0 ? **probe : *own;
      TensorRef ref = x.ref();
      for (int i = 0; i < 3 && statuses[w]; ++i) statuses[w] = s.run(std::span<const TensorRef>(&ref, 1), outs[w]);
    });
  for (auto& t : workers) t.join();
  for (int w = 0; w < 2; ++w) {
    ASSERT_TRUE(statuses[w]) << statuses[w].error().message;
    expect_same(outs[w][0], plain.outputs[0], 1e-4, "worker " + std::to_string(w));
  }
}

// The naive reference of Transpose: output index -> input index, one element at a time.
std::vector<double> naive_transpose(const std::vector<double>& x, const std::vector<int64_t>& in_dims, const std::vector<int64_t>& perm) {
  const size_t r = in_dims.size();
  std::vector<int64_t> out_dims(r), in_strides(r, 1);
  for (size_t d = 0; d < r; ++d) out_dims[d] = in_dims[static_cast<size_t>(perm[d])];
  for (size_t d = r - 1; d > 0; --d) in_strides[d - 1] = in_strides[d] * in_dims[d];
  std::vector<double> y(x.size());
  for (size_t o = 0; o < y.size(); ++o) {
    int64_t rem = static_cast<int64_t>(o), src = 0;
    for (size_t d = r; d-- > 0;) {
      src += (rem % out_dims[d]) * in_strides[static_cast<size_t>(perm[d])];
      rem /= out_dims[d];
    }
    y[o] = x[static_cast<size_t>(src)];
  }
  return y;
}

TEST(NativeEngine, TransposesOfEveryPermutationMatchTheNaiveReference) {
  // Rank 4 and 5, odd sizes (partial tiles): every kernel path (batched 2-D tiles, tiles that
  // move the innermost dim, the element walk).
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, 33, 5, 40}, std::vector<int64_t>{3, 2, 37, 1, 35}}) {
    std::vector<int64_t> perm(dims.size());
    std::iota(perm.begin(), perm.end(), 0);
    const int64_t n = std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
    const auto values = random_vector(static_cast<size_t>(n), 11);
    const std::vector<double> x(values.begin(), values.end());
    do {
      OnnxBuilder b;
      b.input("x", dims);
      OnnxBuilder::attr_ints(b.node("Transpose", {"x"}, {"y"}), "perm", perm);
      b.output("y");
      auto r = run_model(b.bytes(), {tensor(Shape::from(dims.begin(), dims.end()), values)}, true, true, 2);
      ASSERT_EQ(r.outputs.size(), 1u);
      std::string what = "perm";
      for (int64_t p : perm) what += " " + std::to_string(p);
      expect_close(r.outputs[0], naive_transpose(x, dims, perm), 1e-7, what);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(NativeEngine, DflSoftmaxBetweenTransposesMatchesTheNaiveReference) {
  // The DFL head as exported: [1, 4, 16, A] -> [1, A, 4, 16] -> softmax over the 16 bins ->
  // [1, 16, 4, A]. Softmax's rows of 16 take the vectorized reductions.
  const int64_t a = 1344;
  OnnxBuilder b;
  b.input("x", {1, 4, 16, a});
  OnnxBuilder::attr_ints(b.node("Transpose", {"x"}, {"t"}), "perm", {0, 3, 1, 2});
  OnnxBuilder::attr_int(b.node("Softmax", {"t"}, {"s"}), "axis", 3);
  OnnxBuilder::attr_ints(b.node("Transpose", {"s"}, {"y"}), "perm", {0, 3, 2, 1});
  b.output("y");
  const auto values = random_vector(static_cast<size_t>(64 * a), 5, -8.f, 8.f);
  auto r = run_model(b.bytes(), {tensor(Shape{1, 4, 16, a}, values)}, true, true, 1);
  ASSERT_EQ(r.outputs.size(), 1u);
  const std::vector<double> x(values.begin(), values.end());
  std::vector<double> t = naive_transpose(x, {1, 4, 16, a}, {0, 3, 1, 2});
  for (size_t row = 0; row < t.size() / 16; ++row) {
    double m = -1e300, sum = 0;
    for (size_t k = 0; k < 16; ++k) m = std::max(m, t[row * 16 + k]);
    for (size_t k = 0; k < 16; ++k) sum += std::exp(t[row * 16 + k] - m);
    for (size_t k = 0; k < 16; ++k) t[row * 16 + k] = std::exp(t[row * 16 + k] - m) / sum;
  }
  expect_close(r.outputs[0], naive_transpose(t, {1, a, 4, 16}, {0, 3, 2, 1}), 1e-6, "DFL");
}

TEST(NativeEngine, SteadyStateRunsDoNotAllocate) {
  // Our own kernels and the executor allocate nothing once planned. (oneDNN's execute() keeps a
  // little bookkeeping of its own per call, no tensor data, so this model avoids convolutions.)
  OnnxBuilder b;
  b.input("x", {1, 16, 20, 20});
  b.random_initializer("k", {1, 16, 1, 1}, 0.5f, 1.5f);
  b.initializer_i64("split", {2}, {6, 10});
  b.initializer("scales", {4}, {1.f, 1.f, 2.f, 2.f});
  b.initializer_i64("shape", {3}, {1, 16, -1});
  b.node("Mul", {"x", "k"}, {"m"});
  b.node("Sigmoid", {"m"}, {"s"});
  auto* sp = b.node("Split", {"s", "split"}, {"a", "c"});
  OnnxBuilder::attr_int(sp, "axis", 1);
  auto* cat = b.node("Concat", {"c", "a"}, {"cat"});
  OnnxBuilder::attr_int(cat, "axis", 1);
  b.node("Resize", {"cat", "", "scales"}, {"up"});
  b.node("Reshape", {"up", "shape"}, {"r"});
  auto* sm = b.node("Softmax", {"r"}, {"y"});
  OnnxBuilder::attr_int(sm, "axis", 1);
  b.output("y");
  const std::string model = b.bytes();
  auto m = NativeModel::load_from_bytes(model.data(), model.size(), ".");
  ASSERT_TRUE(m) << m.error().message;
  auto s = NativeSession::create(*m, SessionOptions{1});
  HostTensor x = tensor(Shape{1, 16, 20, 20}, random_vector(16 * 20 * 20, 3));
  TensorRef ref = x.ref();
  std::vector<HostTensor> out;
  ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&ref, 1), out));  // plans and allocates
  const void* first = out[0].data();
  const int64_t before = testing::allocation_count();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&ref, 1), out));
  if (before >= 0) EXPECT_EQ(testing::allocation_count() - before, 0);
  EXPECT_EQ(out[0].data(), first);  // outputs reuse their buffers
  EXPECT_EQ((*s)->memory_stats().plans, 1u);
}

TEST(NativeEngine, EveryOutputKeepsItsBufferUntilTheEnd) {
  // One plain output, then two channels-last convolution outputs that each need a conversion
  // step after the graph: those steps come after the first output's last use, and its buffer
  // must not be handed to them.
  OnnxBuilder b;
  b.input("x", {1, 16, 6, 6});
  b.random_initializer("w1", {16, 16, 3, 3}, -0.3f, 0.3f);
  b.random_initializer("w2", {16, 16, 3, 3}, -0.3f, 0.3f);
  b.node("Neg", {"x"}, {"plain"});
  auto* c1 = b.node("Conv", {"x", "w1"}, {"y1"});
  OnnxBuilder::attr_ints(c1, "pads", {1, 1, 1, 1});
  auto* c2 = b.node("Conv", {"x", "w2"}, {"y2"});
  OnnxBuilder::attr_ints(c2, "pads", {1, 1, 1, 1});
  b.output("plain");
  b.output("y1");
  b.output("y2");
  HostTensor x = tensor(Shape{1, 16, 6, 6}, random_vector(16 * 36, 11));
  auto fast = run_model(b.bytes(), {x}, true, true, 1);
  auto plain = run_model(b.bytes(), {x}, false, false, 1);
  ASSERT_EQ(fast.outputs.size(), 3u);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(fast.outputs[0].as<float>()[i], -x.as<float>()[i]) << i;
  for (size_t o = 1; o < 3; ++o)
    for (int64_t i = 0; i < fast.outputs[o].numel(); ++i)
      ASSERT_NEAR(fast.outputs[o].as<float>()[i], plain.outputs[o].as<float>()[i], 1e-4) << o << " " << i;
}

TEST(NativeEngine, AResidualAddThatBroadcastsIsNotAFusedSum) {
  // Found by the backend conformance test: Conv -> Add(y, x1) with x1 a graph input of shape [1]
  // (or [1, C, 1, 1]) was fused as a residual sum before shapes were known, and planning then
  // failed ("the fused sum input does not have the output's shape"). The planner now computes it
  // as an Add after the convolution, and the activations that follow as nodes of their own.
  for (const char* after : {"", "Relu", "LeakyRelu", "Clip", "SiLU"}) {
    for (std::vector<int64_t> other : {std::vector<int64_t>{1}, std::vector<int64_t>{1, 8, 1, 1}}) {
      SCOPED_TRACE(std::string(after) + " other rank " + std::to_string(other.size()));
      OnnxBuilder b(other.size() == 1 ? 17 : 9);  // opset 9: Clip's bounds as attributes
      b.input("x", {1, 8, 5, 5});
      b.input("o", other);
      b.random_initializer("w", {8, 8, 3, 3}, -0.3f, 0.3f);
      auto* c = b.node("Conv", {"x", "w"}, {"c"});
      OnnxBuilder::attr_ints(c, "pads", {1, 1, 1, 1});
      b.node("Sigmoid", {"c"}, {"s"});
      b.node("Mul", {"c", "s"}, {"act"});  // SiLU, fused before the sum
      const std::string sum_out = std::string(after).empty() ? "y" : "sum";
      b.node("Add", {"act", "o"}, {sum_out});
      if (std::string(after) == "Relu") b.node("Relu", {"sum"}, {"y"});
      if (std::string(after) == "LeakyRelu") OnnxBuilder::attr_float(b.node("LeakyRelu", {"sum"}, {"y"}), "alpha", 0.2f);
      if (std::string(after) == "SiLU") b.node("Sigmoid", {"sum"}, {"s2"}), b.node("Mul", {"sum", "s2"}, {"y"});
      if (std::string(after) == "Clip") {
        auto* clip = b.node("Clip", {"sum"}, {"y"});
        if (other.size() == 1) {
          b.initializer("lo", {}, {-0.25f});
          b.initializer("hi", {}, {0.5f});
          clip->add_input("lo");
          clip->add_input("hi");
        } else {
          OnnxBuilder::attr_float(clip, "min", -0.25f);
          OnnxBuilder::attr_float(clip, "max", 0.5f);
        }
      }
      b.output("y");
      HostTensor x = tensor(Shape{1, 8, 5, 5}, random_vector(200, 21));
      HostTensor o(DType::kFloat32, Shape::from(other.begin(), other.end()));
      for (int64_t i = 0; i < o.numel(); ++i) o.as<float>()[i] = 0.3f * static_cast<float>(i % 5) - 0.6f;
      auto fast = run_model(b.bytes(), {x, o}, true, true, 1);
      auto plain = run_model(b.bytes(), {x, o}, false, false, 1);
      ASSERT_EQ(fast.outputs.size(), 1u);
      ASSERT_EQ(plain.outputs.size(), 1u);
      for (int64_t i = 0; i < plain.outputs[0].numel(); ++i)
        ASSERT_NEAR(fast.outputs[0].as<float>()[i], plain.outputs[0].as<float>()[i], 1e-5) << i;
    }
  }
}

TEST(NativeEngine, ChannelsLastOpsBehindAConvMatchThePlainGraph) {
  // Found by the backend conformance test, both behind a convolution (so channels-last):
  //  - Sub/Div/Min with a rank-3 operand [C, H, W] was "converted" to NHWC with a 4-D permutation:
  //    garbage results (1e15 for Div);
  //  - a linear Resize was given NHWC scales and refused ("linear resize of other than the last two
  //    dims"), so a model with bilinear upsampling after a conv did not load.
  for (const char* op : {"Sub", "Div", "Min", "Resize"}) {
    SCOPED_TRACE(op);
    OnnxBuilder b;
    b.input("x", {2, 6, 4, 5});
    b.random_initializer("w", {6, 6, 1, 1}, -0.5f, 0.5f);
    b.node("Conv", {"x", "w"}, {"c"});
    std::vector<HostTensor> inputs{tensor(Shape{2, 6, 4, 5}, random_vector(240, 31))};
    if (std::string(op) == "Resize") {
      b.initializer("scales", {4}, {1.f, 1.f, 2.f, 3.f});
      OnnxBuilder::attr_string(b.node("Resize", {"c", "", "scales"}, {"y"}), "mode", "linear");
    } else {
      b.input("o", {6, 4, 5});
      b.node(op, {"c", "o"}, {"y"});
      inputs.push_back(tensor(Shape{6, 4, 5}, random_vector(120, 32, 0.5f, 2.f)));
    }
    b.output("y");
    auto fast = run_model(b.bytes(), inputs, true, true, 1);
    auto plain = run_model(b.bytes(), inputs, false, false, 1);
    ASSERT_EQ(fast.outputs.size(), 1u);
    ASSERT_EQ(plain.outputs.size(), 1u);
    for (int64_t i = 0; i < plain.outputs[0].numel(); ++i)
      ASSERT_NEAR(fast.outputs[0].as<float>()[i], plain.outputs[0].as<float>()[i], 1e-5) << i;
  }
}

TEST(NativeEngine, FastExpIsAccurate) {
  double worst = 0;
  for (double x = -80; x <= 80; x += 0.001) {
    double want = std::exp(x);
    const float xf = static_cast<float>(x);
    want = std::exp(static_cast<double>(xf));
    double got = ops::fast_exp(xf);
    worst = std::max(worst, std::fabs(got - want) / want);
  }
  EXPECT_LT(worst, 5e-7);
  EXPECT_NEAR(ops::fast_sigmoid(0.f), 0.5f, 1e-7);
  EXPECT_NEAR(ops::fast_sigmoid(-100.f), 0.f, 1e-7);
  EXPECT_NEAR(ops::fast_sigmoid(100.f), 1.f, 1e-7);
}

// The vector SiLU / sigmoid kernels against the exact values in double: every length up to 70
// (the masked tail after whole vectors), in place and not, over the whole float range that
// matters (below -80 both are ~0: the clamp keeps them at e^-80, absolute error < 1e-30).
TEST(NativeEngine, SiluAndSigmoidKernelsMatchTheExactValues) {
  std::vector<float> x;
  for (double v = -90; v <= 90; v += 0.0007) x.push_back(static_cast<float>(v));
  for (float v : {0.f, -0.f, 1e-30f, -1e-30f, 1e-8f, -1e-8f, 87.9f, -87.9f}) x.push_back(v);
  auto check = [](const std::vector<float>& in, const std::vector<float>& silu, const std::vector<float>& sig) {
    double worst = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const double v = in[i], s = 1 / (1 + std::exp(-v));
      if (v >= -80) worst = std::max(worst, std::fabs(sig[i] - s) / s);
      EXPECT_NEAR(silu[i], v * s, 1e-6 * std::fabs(v * s) + 1e-30) << "silu(" << in[i] << ")";
      EXPECT_NEAR(sig[i], s, 1e-6 * s + 1e-30) << "sigmoid(" << in[i] << ")";
    }
    return worst;
  };
  // Every variant this processor runs (the AVX2 one on an AVX-512 machine too), as the engine
  // would pick it on a processor of that level.
  for (const cpu::Isa isa : cpu::runnable_isas()) {
    SCOPED_TRACE(cpu::isa_name(isa));
    std::vector<float> silu(x.size()), sig(x.size());
    ops::silu_isa(isa, x.data(), silu.data(), static_cast<int64_t>(x.size()));
    ops::sigmoid_isa(isa, x.data(), sig.data(), static_cast<int64_t>(x.size()));
    EXPECT_LT(check(x, silu, sig), 1e-6);
    for (int64_t n = 0; n <= 70; ++n) {
      std::vector<float> in = random_vector(static_cast<size_t>(n), static_cast<uint32_t>(n), -12.f, 12.f);
      std::vector<float> a = in, b = in;
      a.push_back(123.f), b.push_back(123.f);  // a sentinel after the end: must stay untouched
      ops::silu_isa(isa, a.data(), a.data(), n);  // in place
      ops::sigmoid_isa(isa, b.data(), b.data(), n);
      EXPECT_EQ(a.back(), 123.f);
      EXPECT_EQ(b.back(), 123.f);
      a.pop_back(), b.pop_back();
      check(in, a, b);
    }
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::vector<float> special{nan, inf, -inf}, s1(3), s2(3);
    ops::silu_isa(isa, special.data(), s1.data(), 3);
    ops::sigmoid_isa(isa, special.data(), s2.data(), 3);
    EXPECT_TRUE(std::isnan(s1[0]));
    EXPECT_TRUE(std::isnan(s2[0]));
    EXPECT_EQ(s1[1], inf);
    EXPECT_EQ(s2[1], 1.f);
    EXPECT_LT(s2[2], 1e-30f);
  }
}

// Found by the fuzzer (a Sigmoid on a NaN tensor): NaN reached a float->int conversion, which
// is undefined. NaN in gives NaN out, as in ONNX Runtime; infinities saturate.
TEST(NativeEngine, FastExpPassesNaNThroughAndSaturatesInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(ops::fast_exp(nan)));
  EXPECT_TRUE(std::isnan(ops::fast_sigmoid(nan)));
  EXPECT_GT(ops::fast_exp(inf), 1e38f);
  EXPECT_LT(ops::fast_exp(-inf), 1e-37f);
  EXPECT_FLOAT_EQ(ops::fast_sigmoid(inf), 1.f);
  EXPECT_NEAR(ops::fast_sigmoid(-inf), 0.f, 1e-30);
}

// Cast of NaN or of a value past the integer range is undefined in C++ (UBSan stops the fuzzer
// there); the engine's Cast and Pad give 0 for NaN and saturate the rest.
TEST(NativeEngine, FloatToIntegerCastsAreDefinedForEveryValue) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(saturate_cast<int32_t>(nan), 0);
  EXPECT_EQ(saturate_cast<int32_t>(inf), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(saturate_cast<int32_t>(-inf), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(saturate_cast<int64_t>(1e30f), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(saturate_cast<int64_t>(-1e300), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(saturate_cast<uint8_t>(300.f), 255);
  EXPECT_EQ(saturate_cast<uint8_t>(-3.f), 0);
  EXPECT_EQ(saturate_cast<int8_t>(-2.7f), -2);  // in range: truncates like static_cast
  EXPECT_EQ(saturate_cast<int64_t>(123456.9), 123456);
  EXPECT_EQ(saturate_cast<int32_t>(int64_t{7}), 7);  // non-float sources pass through
}

TEST(NativeEngine, IntegerArithmeticWrapsInsteadOfOverflowing) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(wrapping_add(kMax, int64_t{1}), kMin);
  EXPECT_EQ(wrapping_sub(kMin, int64_t{1}), kMax);
  EXPECT_EQ(wrapping_mul(kMax, int64_t{2}), int64_t{-2});
  EXPECT_EQ(wrapping_neg(kMin), kMin);
  EXPECT_EQ(wrapping_mul(uint8_t{200}, uint8_t{2}), uint8_t{144});
  EXPECT_EQ(wrapping_add(int32_t{2147483647}, int32_t{1}), std::numeric_limits<int32_t>::min());
  EXPECT_FLOAT_EQ(wrapping_mul(1.5f, 2.f), 3.f);

  // Through the ops, on int64 tensors: Add, Mul, Div and Mod at the edges of the range.
  OnnxBuilder b;
  b.input("a", {4}, onnx::TensorProto::INT64);
  b.initializer_i64("one", {4}, {1, -1, -1, 2});
  b.node("Add", {"a", "one"}, {"sum"});
  b.node("Div", {"a", "one"}, {"quot"});
  b.node("Mod", {"a", "one"}, {"rem"});
  b.node("Mul", {"a", "one"}, {"prod"});
  b.output("sum", onnx::TensorProto::INT64);
  b.output("quot", onnx::TensorProto::INT64);
  b.output("rem", onnx::TensorProto::INT64);
  b.output("prod", onnx::TensorProto::INT64);
  const std::string bytes = b.bytes();
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".");
  ASSERT_TRUE(m) << m.error().message;
  auto s = NativeSession::create(*m, SessionOptions{1});
  ASSERT_TRUE(s) << s.error().message;
  HostTensor a(DType::kInt64, Shape{4});
  const int64_t values[4] = {kMax, kMin, 7, kMax};
  std::copy(values, values + 4, a.as<int64_t>());
  TensorRef ref = a.ref();
  std::vector<HostTensor> out;
  ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&ref, 1), out));
  ASSERT_EQ(out.size(), 4u);
  const int64_t* sum = out[0].as<int64_t>();
  const int64_t* quot = out[1].as<int64_t>();
  const int64_t* rem = out[2].as<int64_t>();
  const int64_t* prod = out[3].as<int64_t>();
  EXPECT_EQ(sum[0], kMin);
  EXPECT_EQ(sum[1], kMax);  // kMin + -1 wraps
  EXPECT_EQ(quot[1], kMin);  // kMin / -1 wraps
  EXPECT_EQ(quot[2], -7);
  EXPECT_EQ(rem[1], 0);
  EXPECT_EQ(prod[1], kMin);  // kMin * -1 wraps
  EXPECT_EQ(prod[3], -2);
}

TEST(NativeEngine, PoolingMatchesNaiveReference) {
  struct Case { const char* op; int k, s, p; bool ceil; int include_pad; };
  for (Case c : {Case{"MaxPool", 5, 1, 2, false, 0}, Case{"MaxPool", 2, 2, 0, false, 0}, Case{"MaxPool", 3, 2, 0, true, 0},
                 Case{"AveragePool", 3, 2, 1, false, 0}, Case{"AveragePool", 3, 2, 1, false, 1}}) {
    OnnxBuilder b;
    const int C = 5, H = 11, W = 14;
    b.input("x", {1, C, H, W});
    auto* n = b.node(c.op, {"x"}, {"y"});
    OnnxBuilder::attr_ints(n, "kernel_shape", {c.k, c.k});
    OnnxBuilder::attr_ints(n, "strides", {c.s, c.s});
    OnnxBuilder::attr_ints(n, "pads", {c.p, c.p, c.p, c.p});
    if (c.ceil) OnnxBuilder::attr_int(n, "ceil_mode", 1);
    if (c.include_pad) OnnxBuilder::attr_int(n, "count_include_pad", 1);
    b.output("y");
    auto xv = random_vector(C * H * W, 21);
    auto dim = [&](int in) {
      int span = in + 2 * c.p - c.k;
      int o = (c.ceil ? (span + c.s - 1) / c.s : span / c.s) + 1;
      if (c.ceil && (o - 1) * c.s >= in + c.p) --o;
      return o;
    };
    const int oh = dim(H), ow = dim(W);
    std::vector<double> want;
    for (int ch = 0; ch < C; ++ch)
      for (int y = 0; y < oh; ++y)
        for (int x = 0; x < ow; ++x) {
          double m = -INFINITY, sum = 0;
          int count = 0, count_pad = 0;
          for (int ky = 0; ky < c.k; ++ky)
            for (int kx = 0; kx < c.k; ++kx) {
              int iy = y * c.s - c.p + ky, ix = x * c.s - c.p + kx;
              if (iy < H + c.p && ix < W + c.p) ++count_pad;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              double v = xv[static_cast<size_t>((ch * H + iy) * W + ix)];
              m = std::max(m, v), sum += v, ++count;
            }
          want.push_back(std::string(c.op) == "MaxPool" ? m : sum / (c.include_pad ? count_pad : count));
        }
    for (bool cl : {true, false}) {
      // A conv in front makes the pool's input channels-last in the fast layout.
      auto r = run_model(b.bytes(), {tensor(Shape{1, C, H, W}, xv)}, true, cl);
      ASSERT_EQ(r.outputs.size(), 1u);
      EXPECT_EQ(r.outputs[0].shape(), (Shape{1, C, oh, ow})) << c.op;
      expect_close(r.outputs[0], want, 1e-5, std::string(c.op) + " k" + std::to_string(c.k));
    }
  }
}

TEST(NativeEngine, ArenaIsSmallerThanTheTensorsItHolds) {
  // A chain of 20 convolutions: lifetimes are short, so the arena needs a few tensors at a time.
  OnnxBuilder b;
  b.input("x", {1, 8, 32, 32});
  b.random_initializer("w", {8, 8, 3, 3}, -0.1f, 0.1f);
  std::string prev = "x";
  for (int i = 0; i < 20; ++i) {
    std::string out = i == 19 ? "y" : "t" + std::to_string(i);
    auto* c = b.node("Conv", {prev, "w"}, {out});
    OnnxBuilder::attr_ints(c, "pads", {1, 1, 1, 1});
    prev = out;
  }
  b.output("y");
  HostTensor x = tensor(Shape{1, 8, 32, 32}, random_vector(8 * 32 * 32, 1));
  auto plain = run_model(b.bytes(), {x}, false, false);
  const std::string model = b.bytes();
  auto m = NativeModel::load_from_bytes(model.data(), model.size(), ".");
  ASSERT_TRUE(m);
  auto s = NativeSession::create(*m, SessionOptions{2});
  TensorRef ref = x.ref();
  std::vector<HostTensor> out;
  ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&ref, 1), out));
  expect_same(out[0], plain.outputs[0], 1e-4, "20 convolutions");
  auto stats = (*s)->memory_stats();
  const size_t tensor_bytes = 8 * 32 * 32 * sizeof(float);
  EXPECT_GE(stats.intermediate_bytes, 19 * tensor_bytes);
  EXPECT_LE(stats.arena_bytes, 3 * tensor_bytes) << "arena " << stats.arena_bytes << " of " << stats.intermediate_bytes;
}

// Strided Slices (YOLOX's Focus stem: every second row and column of the image) against a naive
// index walk, for 1-, 4- and 8-byte elements (Cast around the Slice; Cast has no 16-bit type), positive and negative
// steps on the last axis and a step on an outer one, on 1 and 3 threads: the strided row copy
// is typed per element size and split over the threads.
TEST(NativeEngine, StridedSlicesMatchANaiveWalkForEveryElementSize) {
  const int64_t N = 2, C = 3, H = 9, W = 11;
  struct Case {
    int64_t h_start, h_end, h_step, w_start, w_end, w_step;
  };
  for (const int elem : {onnx::TensorProto::UINT8, onnx::TensorProto::INT32, onnx::TensorProto::FLOAT, onnx::TensorProto::INT64})
  for (const Case k : {Case{0, H, 2, 0, W, 2}, Case{1, H, 2, 1, W, 2}, Case{0, H, 1, W - 1, -W - 1, -3}, Case{H - 1, 0, -2, 2, 9, 3}})
  for (const int threads : {1, 3}) {
    OnnxBuilder b;
    b.input("x", {N, C, H, W});
    b.initializer_i64("starts", {2}, {k.h_start, k.w_start});
    b.initializer_i64("ends", {2}, {k.h_end, k.w_end});
    b.initializer_i64("axes", {2}, {2, 3});
    b.initializer_i64("steps", {2}, {k.h_step, k.w_step});
    OnnxBuilder::attr_int(b.node("Cast", {"x"}, {"xc"}), "to", elem);
    b.node("Slice", {"xc", "starts", "ends", "axes", "steps"}, {"s"});
    OnnxBuilder::attr_int(b.node("Cast", {"s"}, {"y"}), "to", onnx::TensorProto::FLOAT);
    b.output("y");
    // Small whole numbers: exact in every element type.
    std::vector<float> v(static_cast<size_t>(N * C * H * W));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 200);
    auto r = run_model(b.bytes(), {tensor(Shape{N, C, H, W}, v)}, true, false, threads);
    ASSERT_EQ(r.outputs.size(), 1u);
    std::vector<float> want;
    auto in_range = [](int64_t i, int64_t end, int64_t step) { return step > 0 ? i < end : i > end; };
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t h = k.h_start; in_range(h, k.h_end, k.h_step); h += k.h_step)
          for (int64_t w = std::min(k.w_start, W - 1); in_range(w, std::max<int64_t>(k.w_end, -1), k.w_step); w += k.w_step)
            want.push_back(v[static_cast<size_t>(((n * C + c) * H + h) * W + w)]);
    const HostTensor& got = r.outputs[0];
    ASSERT_EQ(static_cast<size_t>(got.numel()), want.size()) << got.shape().str();
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(got.as<float>()[i], want[i]) << "element size case " << elem << ", threads " << threads << ", at " << i;
  }
}

}  // namespace
}  // namespace sd::native
