// QDQ convolutions folded into oneDNN int8 convolutions (passes/qdq_fusion.cpp,
// cpu/dnnl_qconv.cpp) against the same graph run as written (LoadOptions::fuse_qdq off:
// dequantize, float Conv, quantize), on a small model in ONNX Runtime's quantize_static format.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <optional>
#include <random>

#include "core/cpu_isa.h"
#include "engine/native/conv_choice.h"
#include "engine/native/cpu/int8_support.h"
#include "engine/native/session.h"
#include "onnx_builder.h"

namespace sd::native {
namespace {

using test::init_raw;
using test::OnnxBuilder;

struct ConvSpec {
  int64_t in, out, k, stride, group;
  bool per_channel;
  int bias;  // 0 none, 1 int32 through DequantizeLinear, 2 float, 3 as 1 with an explicit int32 zero point 0
  float y_scale;
  int y_type;  // onnx::TensorProto::UINT8 / INT8
  int y_zero;
  bool silu = false;  // then DequantizeLinear -> x * Sigmoid(x) -> QuantizeLinear (scale x 0.6)
  // With silu: the SiLU's float result read by a float op first (Add(s, s), then QuantizeLinear at
  // scale x 1.2), as YOLOv8's C2f reads it (Split, Concat, the residual Add).
  bool silu_read_as_float = false;
  // The last convolution only: its output not quantized (no QuantizeLinear after it), the model's
  // output as it is: `streamdet quantize --head int8-input`'s head convolutions.
  bool float_output = false;
};

// x (float) -> QuantizeLinear (u8) -> [DequantizeLinear -> Conv -> QuantizeLinear] per spec ->
// DequantizeLinear -> y (float).
std::string qdq_model(const std::vector<ConvSpec>& convs, int64_t size, int w_max) {
  OnnxBuilder b(13);
  std::mt19937 rng(11);
  b.input("x", {1, convs[0].in, size, size});
  b.initializer("s0", {}, {1.f / 255.f});
  init_raw<uint8_t>(b, "z0", {}, onnx::TensorProto::UINT8, {0});
  b.node("QuantizeLinear", {"x", "s0", "z0"}, {"q0"});
  std::string q = "q0", s = "s0", z = "z0";
  float in_scale = 1.f / 255.f;
  for (size_t i = 0; i < convs.size(); ++i) {
    const ConvSpec& c = convs[i];
    const std::string id = std::to_string(i + 1);
    b.node("DequantizeLinear", {q, s, z}, {"d" + id});
    std::uniform_int_distribution<int> wi(-w_max, w_max);
    std::vector<int8_t> w(static_cast<size_t>(c.out * (c.in / c.group) * c.k * c.k));
    for (auto& v : w) v = static_cast<int8_t>(wi(rng));
    init_raw<int8_t>(b, "w" + id, {c.out, c.in / c.group, c.k, c.k}, onnx::TensorProto::INT8, w);
    std::uniform_real_distribution<float> su(0.5f, 1.5f);
    const float base = 1.5f / (static_cast<float>(w_max) * std::sqrt(static_cast<float>(c.in / c.group * c.k * c.k)));
    std::vector<float> ws(c.per_channel ? static_cast<size_t>(c.out) : 1);
    for (auto& v : ws) v = base * su(rng);
    b.initializer("ws" + id, c.per_channel ? std::vector<int64_t>{c.out} : std::vector<int64_t>{}, ws);
    init_raw<int8_t>(b, "wz" + id, c.per_channel ? std::vector<int64_t>{c.out} : std::vector<int64_t>{}, onnx::TensorProto::INT8,
                     std::vector<int8_t>(ws.size(), 0));
    auto* dw = b.node("DequantizeLinear", {"w" + id, "ws" + id, "wz" + id}, {"wf" + id});
    OnnxBuilder::attr_int(dw, "axis", 0);
    std::vector<std::string> ins{"d" + id, "wf" + id};
    std::uniform_real_distribution<float> bu(-0.5f, 0.5f);
    if (c.bias == 1 || c.bias == 3) {
      std::vector<int32_t> bq(static_cast<size_t>(c.out));
      std::vector<float> bs(static_cast<size_t>(c.out));
      for (int64_t o = 0; o < c.out; ++o) {
        bs[static_cast<size_t>(o)] = in_scale * ws[c.per_channel ? static_cast<size_t>(o) : 0];
        bq[static_cast<size_t>(o)] = static_cast<int32_t>(std::lround(bu(rng) / bs[static_cast<size_t>(o)]));
      }
      init_raw<int32_t>(b, "b" + id, {c.out}, onnx::TensorProto::INT32, bq);
      b.initializer("bs" + id, {c.out}, bs);
      std::vector<std::string> dq_ins{"b" + id, "bs" + id};
      if (c.bias == 3) {
        init_raw<int32_t>(b, "bz" + id, {c.out}, onnx::TensorProto::INT32, std::vector<int32_t>(static_cast<size_t>(c.out), 0));
        dq_ins.push_back("bz" + id);
      }
      OnnxBuilder::attr_int(b.node("DequantizeLinear", dq_ins, {"bf" + id}), "axis", 0);
      ins.push_back("bf" + id);
    } else if (c.bias == 2) {
      std::vector<float> bf(static_cast<size_t>(c.out));
      for (auto& v : bf) v = bu(rng);
      b.initializer("bf" + id, {c.out}, bf);
      ins.push_back("bf" + id);
    }
    auto* conv = b.node("Conv", ins, {c.float_output ? "y" : "c" + id});
    OnnxBuilder::attr_ints(conv, "pads", {c.k / 2, c.k / 2, c.k / 2, c.k / 2});
    OnnxBuilder::attr_ints(conv, "strides", {c.stride, c.stride});
    OnnxBuilder::attr_int(conv, "group", c.group);
    if (c.float_output) {
      b.output("y");
      return b.bytes();
    }
    s = "ys" + id, z = "yz" + id, q = "q" + id;
    b.initializer(s, {}, {c.y_scale});
    if (c.y_type == onnx::TensorProto::UINT8) init_raw<uint8_t>(b, z, {}, c.y_type, {static_cast<uint8_t>(c.y_zero)});
    else init_raw<int8_t>(b, z, {}, c.y_type, {static_cast<int8_t>(c.y_zero)});
    b.node("QuantizeLinear", {"c" + id, s, z}, {q});
    in_scale = c.y_scale;
    if (c.silu) {
      b.node("DequantizeLinear", {q, s, z}, {"sd" + id});
      b.node("Sigmoid", {"sd" + id}, {"sg" + id});
      b.node("Mul", {"sd" + id, "sg" + id}, {"sm" + id});
      std::string silu_out = "sm" + id;
      in_scale = c.y_scale * 0.6f;
      if (c.silu_read_as_float) {
        b.node("Add", {silu_out, silu_out}, {"sa" + id});
        silu_out = "sa" + id;
        in_scale = c.y_scale * 1.2f;
      }
      s = "ss" + id, z = "sz" + id, q = "sq" + id;
      b.initializer(s, {}, {in_scale});
      if (c.y_type == onnx::TensorProto::UINT8) init_raw<uint8_t>(b, z, {}, c.y_type, {static_cast<uint8_t>(c.y_zero)});
      else init_raw<int8_t>(b, z, {}, c.y_type, {static_cast<int8_t>(c.y_zero)});
      b.node("QuantizeLinear", {silu_out, s, z}, {q});
    }
  }
  b.node("DequantizeLinear", {q, s, z}, {"y"});
  b.output("y");
  return b.bytes();
}

struct Ran {
  HostTensor y;
  std::vector<std::string> ops;
  std::vector<std::string> int8_convs;  // the Int8Conv steps' implementations, in plan order
};

Ran run(const std::string& bytes, const HostTensor& x, bool fuse, int conv_candidate = kTimedCandidate, std::optional<bool> int8_exact = {}) {
  LoadOptions lo;
  lo.fuse_qdq = fuse;
  lo.conv_candidate = conv_candidate;
  lo.int8_exact = int8_exact;
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", lo);
  EXPECT_TRUE(m) << m.error().message;
  if (!m) return {};
  SessionOptions so;
  so.threads = 2;
  auto s = NativeSession::create(*m, so);
  EXPECT_TRUE(s) << s.error().message;
  if (!s) return {};
  TensorRef ref = x.ref();
  std::vector<HostTensor> out;
  auto st = (*s)->run(std::span<const TensorRef>(&ref, 1), out);
  EXPECT_TRUE(st) << st.error().message;
  Ran r;
  if (st) r.y = out[0];
  for (const Node& n : (*m)->graph().nodes) r.ops.push_back(n.op_type);
  auto summary = (*s)->plan_summary({x.shape()});
  EXPECT_TRUE(summary) << (summary ? "" : summary.error().message);
  if (summary)
    for (const auto& step : summary->steps)
      if (step.label.rfind("Int8Conv", 0) == 0) r.int8_convs.push_back(step.implementation);
  return r;
}

// w_max: the weights' range, [-w_max, w_max]. Every QDQ convolution is one Int8Conv; without
// exact int8 kernels (no VNNI: the processor's, or int8_exact false) only those with a uint8
// source and 7-bit weights (63) run oneDNN's int8 kernels, the others are computed in float32.
// conv_candidate forced (conv_choice.h): on the nodes computed without oneDNN's int8 kernels, 0 is
// float32 and 1 the int16 Winograd (cpu/winograd_int16.h) wherever it takes the node.
void expect_matches_unfused(const std::vector<ConvSpec>& convs, int64_t size, int w_max, std::optional<bool> int8_exact = {},
                            int conv_candidate = kTimedCandidate) {
  const std::string bytes = qdq_model(convs, size, w_max);
  const bool exact = int8_exact.value_or(int8_dot_products_exact());
  long in_float = 0;
  for (size_t i = 0; i < convs.size(); ++i) {
    const bool u8_source = i == 0 || convs[i - 1].y_type == onnx::TensorProto::UINT8;
    in_float += !exact && !(u8_source && w_max <= 63);
  }
  HostTensor x(DType::kFloat32, Shape{1, convs[0].in, size, size});
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  const Ran fused = run(bytes, x, true, conv_candidate, int8_exact), plain = run(bytes, x, false);
  ASSERT_EQ(fused.y.shape(), plain.y.shape());
  // Folded: one Int8Conv per convolution, no DequantizeLinear between them (int8 stays int8).
  EXPECT_EQ(std::count(fused.ops.begin(), fused.ops.end(), "Int8Conv"), static_cast<long>(convs.size()));
  // Those that could run either way: oneDNN's int8 kernel with AVX-512 VNNI, else the faster of it
  // and float32 or int16 (timed, cpu/dnnl_qconv.cpp).
  // (Computed in float32, or by the int16 Winograd on the 3x3 stride-1 layers it takes.)
  const auto float_convs = std::count_if(fused.int8_convs.begin(), fused.int8_convs.end(), [](const std::string& im) {
    return im.rfind("float32 ", 0) == 0 || im.rfind("int16 ", 0) == 0;
  });
  if (!exact && conv_candidate >= 1 && cpu::detected_isa() >= cpu::Isa::kAvx2) {
    long int16_takes = 0;
    for (size_t i = 0; i < convs.size(); ++i) {
      const ConvSpec& c = convs[i];
      const bool u8_source = i == 0 || convs[i - 1].y_type == onnx::TensorProto::UINT8;
      int16_takes += !(u8_source && w_max <= 63) && c.group == 1 && c.in % 16 == 0 && c.out % 16 == 0;
    }
    EXPECT_EQ(std::count_if(fused.int8_convs.begin(), fused.int8_convs.end(), [](const std::string& im) { return im.rfind("int16 ", 0) == 0; }),
              int16_takes);
  }
  if (int8_kernels_avx512_vnni()) EXPECT_EQ(float_convs, in_float);
  else EXPECT_GE(float_convs, in_float);  // the timing may take our kernels for layers oneDNN's compute exactly
  // The output's DequantizeLinear is a table of its bytes (passes/int8_dataflow.cpp).
  EXPECT_EQ(std::count(fused.ops.begin(), fused.ops.end(), "DequantizeLinear"), 0);
  EXPECT_EQ(std::count(fused.ops.begin(), fused.ops.end(), "Int8Table"), 1);
  EXPECT_EQ(std::count(fused.ops.begin(), fused.ops.end(), "Sigmoid"), 0);  // SiLUs are tables of the Int8Convs
  EXPECT_EQ(std::count(fused.ops.begin(), fused.ops.end(), "Mul"), 0);
  EXPECT_EQ(std::count(plain.ops.begin(), plain.ops.end(), "Int8Conv"), 0);
  // Both round once per layer; their sums differ in the last bits (int32 exact against float),
  // so a value may land one step apart, and that step can move the next layer's by about one.
  const float step = convs.back().y_scale * (convs.back().silu ? (convs.back().silu_read_as_float ? 1.2f : 0.6f) : 1.f);
  double worst = 0;
  int64_t equal = 0, clipped = 0;
  for (int64_t i = 0; i < fused.y.numel(); ++i) {
    const double d = std::fabs(fused.y.as<float>()[i] - plain.y.as<float>()[i]);
    worst = std::max(worst, d);
    equal += d == 0;
    clipped += std::fabs(plain.y.as<float>()[i]) > 120 * step;
  }
  EXPECT_LE(worst, 2.01 * step * static_cast<double>(convs.size()));
  EXPECT_GT(equal, fused.y.numel() * 9 / 10);
  EXPECT_LT(clipped, fused.y.numel() / 10);  // the scales keep the values in range: the case tests the arithmetic
}

const std::vector<ConvSpec> kChain = {{3, 16, 3, 1, 1, true, 1, 0.05f, onnx::TensorProto::UINT8, 128},
                          {16, 32, 3, 2, 1, true, 3, 0.05f, onnx::TensorProto::INT8, -3},
                          {32, 32, 1, 1, 1, false, 2, 0.05f, onnx::TensorProto::INT8, 0},
                          {32, 32, 3, 1, 4, true, 0, 0.05f, onnx::TensorProto::UINT8, 120}};

// 7-bit weights (ONNX Runtime's reduce_range): folded on every x86 processor where the source is
// uint8, everywhere with VNNI.
TEST(QdqFusion, ChainOfInt8ConvolutionsMatchesTheDequantizedGraph) { expect_matches_unfused(kChain, 24, 63); }

// Full-range weights: oneDNN's int8 kernels where the products are exact (VNNI), float32
// elsewhere; the results match either way. Run with ONEDNN_MAX_CPU_ISA=AVX2 on a VNNI machine
// in oneDNN's int8 kernels, they did not (vpmaddubsw's int16 saturation: a third of the values
// equal; int8 sources: one step off).
TEST(QdqFusion, FullRangeWeightsAreFoldedOnlyWhereExact) { expect_matches_unfused(kChain, 24, 127); }

// As on a processor without VNNI, whatever this one has: full-range weights and the int8 sources
// computed in float32 between int8 tensors (cpu/int8_conv_in_float.h), with and without the
// fused SiLUs, quantized or read as float; 7-bit weights on uint8 sources in oneDNN's int8
// kernels beside them. Before, these stayed as written: every QuantizeLinear, DequantizeLinear,
// Sigmoid and Mul a node of its own, the model slower than its float original.
TEST(QdqFusion, WithoutExactInt8KernelsTheConvolutionsAreComputedInFloat) {
  expect_matches_unfused(kChain, 24, 127, false);
  expect_matches_unfused(kChain, 24, 63, false);
  std::vector<ConvSpec> chain = kChain;
  for (auto& c : chain) c.silu = true;
  expect_matches_unfused(chain, 24, 127, false);
  for (auto& c : chain) c.silu_read_as_float = true;
  expect_matches_unfused(chain, 24, 127, false);
}

// 3x3 stride-1, 1x1 and 3x3 stride-2 layers as the int16 kernels take them (cpu/int16_conv.h:
// Winograd, rows as they are, rows of taps; channels multiples of 16), on a processor without
// exact int8 kernels: uint8 and int8 sources, per-channel and per-tensor weights, each bias form,
// SiLU quantized and read as float; forced (candidate 1), then timed against float32. Their values
// are the graph's as written, within the float roundings after the exact integer sums.
TEST(QdqFusion, Int16KernelsMatchTheDequantizedGraph) {
  std::vector<ConvSpec> chain = {{16, 32, 3, 1, 1, true, 1, 0.05f, onnx::TensorProto::INT8, -3},
                                 {32, 32, 3, 1, 1, false, 3, 0.05f, onnx::TensorProto::UINT8, 120},
                                 {32, 48, 1, 1, 1, true, 1, 0.05f, onnx::TensorProto::INT8, 7},
                                 {48, 48, 3, 2, 1, true, 1, 0.05f, onnx::TensorProto::UINT8, 100},
                                 {48, 16, 3, 1, 1, true, 2, 0.05f, onnx::TensorProto::INT8, 5},
                                 {16, 16, 1, 1, 1, false, 0, 0.05f, onnx::TensorProto::UINT8, 3},
                                 {16, 16, 3, 1, 1, true, 0, 0.05f, onnx::TensorProto::UINT8, 0}};
  expect_matches_unfused(chain, 21, 127, false, 1);
  expect_matches_unfused(chain, 21, 127, false);
  for (auto& c : chain) c.silu = true;
  expect_matches_unfused(chain, 21, 127, false, 1);
  for (auto& c : chain) c.silu_read_as_float = true;
  expect_matches_unfused(chain, 21, 127, false, 1);
}

// YOLOv8's pattern: every quantized convolution followed by a quantized SiLU.
TEST(QdqFusion, SiluBetweenInt8ConvolutionsMatchesTheDequantizedGraph) {
  std::vector<ConvSpec> chain = kChain;
  for (auto& c : chain) c.silu = true;
  expect_matches_unfused(chain, 24, 63);
}

// `streamdet quantize`'s YOLOv8 layout: the SiLU's float result read by a float op (C2f's Split,
// Concat, residual Add) before it is quantized again: the SiLU is a float table of the Int8Conv.
TEST(QdqFusion, SiluReadAsFloatIsATableOfTheInt8Convolution) {
  std::vector<ConvSpec> chain = kChain;
  for (auto& c : chain) c.silu = c.silu_read_as_float = true;
  expect_matches_unfused(chain, 24, 63);
}

// oneDNN's int8 implementations of a node (cpu/dnnl_qconv.cpp: jit_int8 and brgconv on an
// AVX-512 VNNI processor, say) compute the same integer sums and round them the same way: each
// one, forced, gives the bytes of the first (what ran before the timing); an index past the last
// takes the last; the timed choice takes one of them and the same bytes. Shapes where oneDNN has
// several (3x3 and 1x1 at 64 channels) and, on this machine, one (the grouped layer); the last
// writes floats (the head's, y_float).
TEST(QdqFusion, EveryInt8ImplementationGivesTheSameBytes) {
  const std::vector<ConvSpec> chain = {{3, 32, 3, 2, 1, true, 1, 0.05f, onnx::TensorProto::UINT8, 128, true},
                                       {32, 64, 3, 1, 1, true, 1, 0.05f, onnx::TensorProto::UINT8, 120},
                                       {64, 64, 1, 1, 1, false, 2, 0.05f, onnx::TensorProto::UINT8, 128, true},
                                       {64, 64, 3, 2, 1, true, 3, 0.05f, onnx::TensorProto::UINT8, 100},
                                       {64, 64, 3, 1, 4, true, 0, 0.05f, onnx::TensorProto::UINT8, 128},
                                       {64, 48, 1, 1, 1, true, 1, 0.05f, onnx::TensorProto::UINT8, 0, false, false, true}};
  const std::string bytes = qdq_model(chain, 40, 63);  // 7-bit weights, uint8 sources: folded on every x86
  HostTensor x(DType::kFloat32, Shape{1, 3, 40, 40});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  auto same_bytes = [](const HostTensor& a, const HostTensor& b) {
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
  };
  std::vector<Ran> forced;
  for (int k = 0; k < 5; ++k) {
    forced.push_back(run(bytes, x, true, k));
    ASSERT_EQ(forced[static_cast<size_t>(k)].int8_convs.size(), chain.size()) << "candidate " << k;
    EXPECT_TRUE(same_bytes(forced[static_cast<size_t>(k)].y, forced[0].y)) << "candidate " << k;
  }
  // Per node: distinct implementations for the first indices, then the last one repeated.
  size_t several = 0;
  for (size_t node = 0; node < chain.size(); ++node) {
    size_t count = 1;
    while (count < forced.size() && forced[count].int8_convs[node] != forced[count - 1].int8_convs[node]) ++count;
    std::string names;
    for (size_t k = 0; k < forced.size(); ++k) {
      if (k < count) names += " " + forced[k].int8_convs[node];
      for (size_t j = 0; j < k && k < count; ++j) EXPECT_NE(forced[k].int8_convs[node], forced[j].int8_convs[node]) << "node " << node;
      if (k >= count) EXPECT_EQ(forced[k].int8_convs[node], forced[count - 1].int8_convs[node]) << "node " << node << ", index " << k;
    }
    std::cout << "[ info     ] Int8Conv " << node << ": " << count << " candidate(s):" << names << "\n";
    several += count > 1;
  }
  if (int8_kernels_avx512_vnni()) EXPECT_GT(several, 0u) << "oneDNN has two int8 kernels for 64-channel 3x3 layers with AVX-512 VNNI";
  const Ran timed = run(bytes, x, true);
  ASSERT_EQ(timed.int8_convs.size(), chain.size());
  // Without AVX-512 VNNI the timing may also take a node computed in float32 or by the int16
  // Winograd (dnnl_qconv.cpp's faster_of):
  // its values are the graph's as written, not these bytes (expect_matches_unfused checks them).
  bool any_float = false;
  for (size_t node = 0; node < chain.size(); ++node) {
    if (timed.int8_convs[node].rfind("float32 ", 0) == 0 || timed.int8_convs[node].rfind("int16 ", 0) == 0) {
      EXPECT_FALSE(int8_kernels_avx512_vnni()) << "node " << node << ": " << timed.int8_convs[node];
      any_float = true;
      continue;
    }
    bool among = false;
    for (const Ran& f : forced) among = among || f.int8_convs[node] == timed.int8_convs[node];
    EXPECT_TRUE(among) << "node " << node << ": " << timed.int8_convs[node];
  }
  if (!any_float) EXPECT_TRUE(same_bytes(timed.y, forced[0].y));
}

// The head's last convolution with its output left float (DequantizeLinear of the quantized
// input and of the weights -> Conv -> the model's output): one Int8Conv writing floats, against
// the graph as written. The last convolution reads the same bytes either way where the layers
// before it agree; then its two results differ only by float rounding: the plain Conv rounds
// each of its K products x*w (the dequantized x and w rounded too) and each of its K additions,
// the Int8Conv sums exactly in int32 and rounds a few times after (sum + bias in accumulator
// units, x_scale * w_scale, the product): at most (K + 8) roundings of u = 2^-24 relative to
// S = sum |x*w| + |bias|. Here |x| <= x_scale * 255 and sum |w| <= 2.25 sqrt(K) by construction
// (qdq_model: |w| <= 63 * 1.5 * 1.5 / (63 sqrt(K))), |bias| <= 0.5.
void expect_float_output_matches(const std::vector<ConvSpec>& convs, int64_t size) {
  const std::string bytes = qdq_model(convs, size, 63);
  HostTensor x(DType::kFloat32, Shape{1, convs[0].in, size, size});
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> u(0, 255);
  // On the input's quantization grid: both paths quantize it to the same bytes.
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = static_cast<float>(u(rng)) / 255.f;
  const Ran fused = run(bytes, x, true), plain = run(bytes, x, false);
  ASSERT_EQ(fused.y.shape(), plain.y.shape());
  ASSERT_EQ(fused.y.dtype(), DType::kFloat32);
  // Every convolution an Int8Conv (7-bit weights, uint8 sources: on every x86 processor), the
  // last one writing the floats itself: no Conv, no DequantizeLinear, no float table before it.
  auto count = [&](const char* op) { return std::count(fused.ops.begin(), fused.ops.end(), op); };
  EXPECT_EQ(count("Int8Conv"), static_cast<long>(convs.size()));
  EXPECT_EQ(count("Conv"), 0);
  EXPECT_EQ(count("DequantizeLinear"), 0);
  EXPECT_EQ(count("Int8Table"), 0);
  EXPECT_EQ(count("Sigmoid"), 0);
  const ConvSpec& last = convs.back();
  const double k = static_cast<double>(last.in / last.group * last.k * last.k);
  const ConvSpec* prev = convs.size() > 1 ? &convs[convs.size() - 2] : nullptr;
  const double x_scale = prev ? prev->y_scale * (prev->silu ? 0.6 : 1.0) : 1.0 / 255.0;
  const double x_max = x_scale * 255.0;
  const double s_max = x_max * 2.25 * std::sqrt(k) + 0.5;
  const double bound = (k + 8) * std::ldexp(1.0, -24) * s_max;
  // A layer before may round one value one step apart (see expect_matches_unfused): that moves
  // this output by at most one step times one weight (<= 2.25 / sqrt(K)) per differing input.
  const double one_step = x_scale * 2.25 / std::sqrt(k);
  int64_t within = 0;
  double worst = 0, largest = 0;
  for (int64_t i = 0; i < fused.y.numel(); ++i) {
    const double d = std::fabs(fused.y.as<float>()[i] - plain.y.as<float>()[i]);
    worst = std::max(worst, d);
    largest = std::max(largest, static_cast<double>(std::fabs(plain.y.as<float>()[i])));
    within += d <= bound;
  }
  EXPECT_GT(largest, 0.1);  // not a case of zeros
  if (!prev) {
    EXPECT_LE(worst, bound);
  } else {
    EXPECT_GT(within, fused.y.numel() * 9 / 10);
    EXPECT_LE(worst, bound + 2.01 * one_step * k);
  }
}

// A single convolution, 3x3, per-channel weights, int32 bias: an Int8Conv writing floats.
TEST(QdqFusion, FloatOutputConvolutionIsAnInt8ConvWritingFloats) {
  ConvSpec c{3, 16, 3, 1, 1, true, 1, 0.05f, onnx::TensorProto::UINT8, 0};
  c.float_output = true;
  expect_float_output_matches({c}, 24);
  c.bias = 2;  // a float bias
  c.per_channel = false;
  expect_float_output_matches({c}, 24);
}

// YOLOv8's head as `streamdet quantize --head int8-input` writes it: a quantized convolution and
// its SiLU quantized for the last 1x1 convolution, whose output stays float. The SiLU is a byte
// table of the first Int8Conv, the second reads its bytes and writes floats (no Int8Table).
TEST(QdqFusion, HeadConvolutionAfterAQuantizedSiluWritesFloats) {
  ConvSpec a{3, 16, 3, 1, 1, true, 1, 0.05f, onnx::TensorProto::UINT8, 128};
  a.silu = true;
  ConvSpec head{16, 24, 1, 1, 1, true, 1, 0.05f, onnx::TensorProto::UINT8, 0};
  head.float_output = true;
  expect_float_output_matches({a, head}, 24);
}

}  // namespace
}  // namespace sd::native
