// ONNX's quantization ops on the CPU (cpu/quant_ops.cpp) beyond ONNX's own node tests: int8 and
// per-channel cases, rounding half to even and saturation, grouped/strided integer convolutions
// against a naive loop, and QLinearConv / QLinearMatMul against the float graph they stand for
// (DequantizeLinear -> Conv/MatMul -> QuantizeLinear).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/native/session.h"
#include "onnx_builder.h"

namespace sd::native {
namespace {

using test::init_raw;
using test::OnnxBuilder;

template <class T>
HostTensor host(DType dt, const Shape& s, const std::vector<T>& v) {
  HostTensor t(dt, s);
  std::copy(v.begin(), v.end(), t.as<T>());
  return t;
}

Result<std::vector<HostTensor>> run(const std::string& bytes, const std::vector<HostTensor>& inputs, bool optimize = true) {
  LoadOptions lo;
  lo.optimize = optimize;
  SD_ASSIGN_OR_RETURN(auto m, NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", lo));
  SessionOptions so;
  so.threads = 2;
  SD_ASSIGN_OR_RETURN(auto s, NativeSession::create(m, so));
  std::vector<TensorRef> refs;
  for (const auto& t : inputs) refs.push_back(t.ref());
  std::vector<HostTensor> out;
  SD_TRY(s->run(refs, out));
  return out;
}

template <class T>
std::vector<T> random_ints(size_t n, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(u(rng));
  return v;
}

TEST(QuantOps, QuantizeRoundsHalfToEvenAndSaturatesPerChannel) {
  // x [2, 5] quantized along axis 0: channel 0 with scale 1, zero point 0; channel 1 with scale
  // 0.5, zero point -10.
  OnnxBuilder b(13);
  b.input("x", {2, 5});
  b.initializer("s", {2}, {1.f, 0.5f});
  init_raw<int8_t>(b, "z", {2}, onnx::TensorProto::INT8, {0, -10});
  OnnxBuilder::attr_int(b.node("QuantizeLinear", {"x", "s", "z"}, {"y"}), "axis", 0);
  b.output("y", onnx::TensorProto::INT8);
  auto out = run(b.bytes(), {host<float>(DType::kFloat32, Shape{2, 5}, {0.5f, 1.5f, 2.5f, -2.5f, 1000.f, 0.25f, 0.75f, -1.25f, 60.f, -1000.f})});
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ((*out)[0].dtype(), DType::kInt8);
  const std::vector<int8_t> want{0, 2, 2, -2, 127, /* 0.5 -> 0, 1.5 -> 2, -2.5 -> -2 */ -10, -8, -12, 110, -128};
  EXPECT_EQ(std::vector<int8_t>((*out)[0].as<int8_t>(), (*out)[0].as<int8_t>() + 10), want);
}

// The per-tensor float path is a vectorized loop: against a naive one element by element
// (x / scale, round half to even, plus the zero point, saturated; NaN gives 0, as the element-wise
// kernel did through saturate_cast), on random values, exact halves, huge values and NaN, u8 and s8.
TEST(QuantOps, QuantizeLinearPerTensorMatchesNaiveLoop) {
  std::mt19937 rng(20261126);
  std::uniform_real_distribution<float> u(-300.f, 300.f);
  const int64_t n = 4099;  // not a multiple of any vector width
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = u(rng);
  for (int64_t i = 0; i < 64; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i - 32) * 0.5f;  // halves at scale 1
  x[100] = std::nanf("");
  x[101] = 1e30f;
  x[102] = -1e30f;
  for (const bool u8 : {true, false}) {
    for (const float scale : {1.0f, 0.37f}) {
      const int zero = u8 ? 100 : -7;
      OnnxBuilder b(13);
      b.input("x", {n});
      b.initializer("s", {}, {scale});
      if (u8) init_raw<uint8_t>(b, "z", {}, onnx::TensorProto::UINT8, {static_cast<uint8_t>(zero)});
      else init_raw<int8_t>(b, "z", {}, onnx::TensorProto::INT8, {static_cast<int8_t>(zero)});
      b.node("QuantizeLinear", {"x", "s", "z"}, {"y"});
      b.output("y", u8 ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8);
      auto out = run(b.bytes(), {host<float>(DType::kFloat32, Shape{n}, x)});
      ASSERT_TRUE(out) << out.error().message;
      const float lo = u8 ? 0.f : -128.f, hi = u8 ? 255.f : 127.f;
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[static_cast<size_t>(i)];
        double want = std::isnan(v) ? 0.0 : std::nearbyint(static_cast<double>(v / scale)) + zero;
        want = std::clamp(want, static_cast<double>(lo), static_cast<double>(hi));
        const int got = u8 ? (*out)[0].as<uint8_t>()[i] : (*out)[0].as<int8_t>()[i];
        ASSERT_EQ(got, static_cast<int>(want)) << "x[" << i << "] = " << v << " scale " << scale << (u8 ? " u8" : " s8");
      }
    }
  }
}

TEST(QuantOps, DequantizeInt32BiasAndInt8PerChannel) {
  OnnxBuilder b(13);
  b.input("q", {1, 3, 2}, onnx::TensorProto::INT8);
  b.initializer("s", {3}, {0.5f, 2.f, 0.25f});
  init_raw<int8_t>(b, "z", {3}, onnx::TensorProto::INT8, {1, -2, 0});
  b.node("DequantizeLinear", {"q", "s", "z"}, {"y"});  // axis 1 by default
  init_raw<int32_t>(b, "bias", {2}, onnx::TensorProto::INT32, {-1000000, 7});
  b.initializer("bs", {2}, {0.001f, 3.f});
  OnnxBuilder::attr_int(b.node("DequantizeLinear", {"bias", "bs"}, {"b"}), "axis", 0);
  b.output("y");
  b.output("b");
  // optimize=false: the bias's DequantizeLinear runs as a step instead of being folded.
  auto out = run(b.bytes(), {host<int8_t>(DType::kInt8, Shape{1, 3, 2}, {1, -127, -128, 127, 5, -5})}, false);
  ASSERT_TRUE(out) << out.error().message;
  const std::vector<float> want{0.f, -64.f, -252.f, 258.f, 1.25f, -1.25f};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ((*out)[0].as<float>()[i], want[i]) << i;
  EXPECT_FLOAT_EQ((*out)[1].as<float>()[0], -1000.f);
  EXPECT_FLOAT_EQ((*out)[1].as<float>()[1], 21.f);
}

// ConvInteger with int8 data, groups, strides, pads and per-output-channel weight zero points,
// against a naive loop over the ONNX definition.
TEST(QuantOps, ConvIntegerMatchesNaiveLoop) {
  const int64_t n = 2, c = 4, h = 7, w = 6, oc = 6, k = 3, group = 2, stride = 2, pad = 1;
  const int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1, cpg = c / group, opg = oc / group;
  auto xv = random_ints<int8_t>(static_cast<size_t>(n * c * h * w), -128, 127, 1);
  auto wv = random_ints<int8_t>(static_cast<size_t>(oc * cpg * k * k), -128, 127, 2);
  const std::vector<int8_t> wz{0, 3, -4, 1, 2, -1};
  const int8_t xz = -7;
  OnnxBuilder b(10);
  b.input("x", {n, c, h, w}, onnx::TensorProto::INT8);
  init_raw<int8_t>(b, "w", {oc, cpg, k, k}, onnx::TensorProto::INT8, wv);
  init_raw<int8_t>(b, "xz", {}, onnx::TensorProto::INT8, {xz});
  init_raw<int8_t>(b, "wz", {oc}, onnx::TensorProto::INT8, wz);
  auto* node = b.node("ConvInteger", {"x", "w", "xz", "wz"}, {"y"});
  OnnxBuilder::attr_int(node, "group", group);
  OnnxBuilder::attr_ints(node, "strides", {stride, stride});
  OnnxBuilder::attr_ints(node, "pads", {pad, pad, pad, pad});
  b.output("y", onnx::TensorProto::INT32);
  auto out = run(b.bytes(), {host<int8_t>(DType::kInt8, Shape{n, c, h, w}, xv)});
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ((*out)[0].shape(), (Shape{n, oc, oh, ow}));
  int mismatches = 0;
  for (int64_t b0 = 0; b0 < n; ++b0)
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          int32_t acc = 0;
          for (int64_t i = 0; i < cpg; ++i)
            for (int64_t ky = 0; ky < k; ++ky)
              for (int64_t kx = 0; kx < k; ++kx) {
                const int64_t iy = y * stride - pad + ky, ix = x * stride - pad + kx;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                const int64_t ci = (o / opg) * cpg + i;
                acc += (xv[static_cast<size_t>(((b0 * c + ci) * h + iy) * w + ix)] - xz) *
                       (wv[static_cast<size_t>(((o * cpg + i) * k + ky) * k + kx)] - wz[static_cast<size_t>(o)]);
              }
          mismatches += (*out)[0].as<int32_t>()[((b0 * oc + o) * oh + y) * ow + x] != acc;
        }
  EXPECT_EQ(mismatches, 0);
}

TEST(QuantOps, MatMulIntegerBroadcastsBatchesWithPerRowAndColumnZeroPoints) {
  const int64_t batch = 3, m = 4, k = 5, n = 2;
  auto av = random_ints<uint8_t>(static_cast<size_t>(batch * m * k), 0, 255, 3);
  auto bv = random_ints<int8_t>(static_cast<size_t>(k * n), -128, 127, 4);
  const std::vector<uint8_t> az{1, 200, 0, 17};
  const std::vector<int8_t> bz{-3, 5};
  OnnxBuilder b(10);
  b.input("a", {batch, m, k}, onnx::TensorProto::UINT8);
  init_raw<int8_t>(b, "b", {k, n}, onnx::TensorProto::INT8, bv);
  init_raw<uint8_t>(b, "az", {m}, onnx::TensorProto::UINT8, az);
  init_raw<int8_t>(b, "bz", {n}, onnx::TensorProto::INT8, bz);
  b.node("MatMulInteger", {"a", "b", "az", "bz"}, {"y"});
  b.output("y", onnx::TensorProto::INT32);
  auto out = run(b.bytes(), {host<uint8_t>(DType::kUInt8, Shape{batch, m, k}, av)});
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ((*out)[0].shape(), (Shape{batch, m, n}));
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int32_t acc = 0;
        for (int64_t q = 0; q < k; ++q)
          acc += (av[static_cast<size_t>((p * m + i) * k + q)] - az[static_cast<size_t>(i)]) * (bv[static_cast<size_t>(q * n + j)] - bz[static_cast<size_t>(j)]);
        EXPECT_EQ((*out)[0].as<int32_t>()[(p * m + i) * n + j], acc) << p << " " << i << " " << j;
      }
}

// QLinearConv (int8, per-channel weights, a bias) against the graph it stands for: dequantized
// input and weights, a float Conv with the dequantized bias, QuantizeLinear. Both round once, at
// the end; the float path's sums differ in their last bits, so at most 1 apart.
TEST(QuantOps, QLinearConvMatchesTheDequantizedFloatGraph) {
  const int64_t c = 3, h = 9, w = 8, oc = 4, k = 3;
  auto xv = random_ints<int8_t>(static_cast<size_t>(c * h * w), -128, 127, 5);
  auto wv = random_ints<int8_t>(static_cast<size_t>(oc * c * k * k), -127, 127, 6);
  const std::vector<float> ws{0.002f, 0.004f, 0.001f, 0.003f};
  const std::vector<int32_t> bias{100, -2000, 0, 555};
  std::vector<float> bs(ws.size());
  for (size_t i = 0; i < ws.size(); ++i) bs[i] = 0.05f * ws[i];
  auto common = [&](OnnxBuilder& b) {
    b.input("x", {1, c, h, w}, onnx::TensorProto::INT8);
    b.initializer("xs", {}, {0.05f});
    init_raw<int8_t>(b, "xz", {}, onnx::TensorProto::INT8, {3});
    init_raw<int8_t>(b, "w", {oc, c, k, k}, onnx::TensorProto::INT8, wv);
    b.initializer("ws", {oc}, ws);
    init_raw<int8_t>(b, "wz", {oc}, onnx::TensorProto::INT8, {0, 0, 0, 0});
    b.initializer("ys", {}, {0.1f});
    init_raw<int8_t>(b, "yz", {}, onnx::TensorProto::INT8, {-5});
    init_raw<int32_t>(b, "bias", {oc}, onnx::TensorProto::INT32, bias);
  };
  OnnxBuilder q(13);
  common(q);
  OnnxBuilder::attr_ints(q.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"}, {"y"}), "pads", {1, 1, 1, 1});
  q.output("y", onnx::TensorProto::INT8);
  OnnxBuilder f(13);
  common(f);
  f.initializer("bs", {oc}, bs);
  f.node("DequantizeLinear", {"x", "xs", "xz"}, {"xf"});
  OnnxBuilder::attr_int(f.node("DequantizeLinear", {"w", "ws", "wz"}, {"wf"}), "axis", 0);
  OnnxBuilder::attr_int(f.node("DequantizeLinear", {"bias", "bs"}, {"bf"}), "axis", 0);
  OnnxBuilder::attr_ints(f.node("Conv", {"xf", "wf", "bf"}, {"yf"}), "pads", {1, 1, 1, 1});
  f.node("QuantizeLinear", {"yf", "ys", "yz"}, {"y"});
  f.output("y", onnx::TensorProto::INT8);
  const auto x = host<int8_t>(DType::kInt8, Shape{1, c, h, w}, xv);
  auto a = run(q.bytes(), {x});
  auto r = run(f.bytes(), {x});
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ((*a)[0].shape(), (*r)[0].shape());
  int worst = 0, saturated = 0;
  for (int64_t i = 0; i < (*a)[0].numel(); ++i) {
    worst = std::max(worst, std::abs((*a)[0].as<int8_t>()[i] - (*r)[0].as<int8_t>()[i]));
    saturated += std::abs((*a)[0].as<int8_t>()[i]) >= 127;
  }
  EXPECT_LE(worst, 1);
  EXPECT_LT(saturated, (*a)[0].numel() / 4);  // the case tests the arithmetic, not the clamp
}

TEST(QuantOps, QLinearMatMulMatchesTheDequantizedFloatGraph) {
  const int64_t m = 5, k = 16, n = 7;
  auto av = random_ints<uint8_t>(static_cast<size_t>(m * k), 0, 255, 7);
  auto bv = random_ints<uint8_t>(static_cast<size_t>(k * n), 0, 255, 8);
  auto common = [&](OnnxBuilder& b) {
    b.input("a", {m, k}, onnx::TensorProto::UINT8);
    b.initializer("as", {}, {0.01f});
    init_raw<uint8_t>(b, "az", {}, onnx::TensorProto::UINT8, {120});
    init_raw<uint8_t>(b, "b", {k, n}, onnx::TensorProto::UINT8, bv);
    b.initializer("bs", {}, {0.02f});
    init_raw<uint8_t>(b, "bz", {}, onnx::TensorProto::UINT8, {130});
    b.initializer("ys", {}, {0.3f});
    init_raw<uint8_t>(b, "yz", {}, onnx::TensorProto::UINT8, {128});
  };
  OnnxBuilder q(13);
  common(q);
  q.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
  q.output("y", onnx::TensorProto::UINT8);
  OnnxBuilder f(13);
  common(f);
  f.node("DequantizeLinear", {"a", "as", "az"}, {"af"});
  f.node("DequantizeLinear", {"b", "bs", "bz"}, {"bf"});
  f.node("MatMul", {"af", "bf"}, {"yf"});
  f.node("QuantizeLinear", {"yf", "ys", "yz"}, {"y"});
  f.output("y", onnx::TensorProto::UINT8);
  const auto a = host<uint8_t>(DType::kUInt8, Shape{m, k}, av);
  auto got = run(q.bytes(), {a});
  auto want = run(f.bytes(), {a});
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_TRUE(want) << want.error().message;
  int worst = 0;
  for (int64_t i = 0; i < m * n; ++i) worst = std::max(worst, std::abs((*got)[0].as<uint8_t>()[i] - (*want)[0].as<uint8_t>()[i]));
  EXPECT_LE(worst, 1);
}

}  // namespace
}  // namespace sd::native
