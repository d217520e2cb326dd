// Quantized tensors kept int8 through Concat, Split, Slice and residual Adds
// (passes/int8_dataflow.cpp, cpu/int8_table_ops.cpp) against the same graph run as written
// (LoadOptions::fuse_qdq off): a YOLOv8 C2f block and SPPF-like tail as `streamdet quantize`
// writes them, and a broadcasting Add of two dequantized tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "engine/native/cpu/byte_table_kernel.h"
#include "engine/native/cpu/int8_float_convert.h"
#include "engine/native/cpu/quantize_nhwc.h"
#include "engine/native/layout_attrs.h"
#include "engine/native/op_registry.h"
#include "engine/native/session.h"
#include "onnx_builder.h"
#include "qdq_model_builder.h"

namespace sd::native {
namespace {

using test::init_raw;
using test::OnnxBuilder;

using Built = test::QdqModelBuilder;

// YOLOv8's C2f (cv1, Split in two, a bottleneck with its residual Add, Concat of the three, cv2)
// then an SPPF-like tail (a float MaxPool beside, a Slice, a Concat quantized again) and an
// upsampling (Resize nearest) quantized again, in the
// layout `streamdet quantize` writes: the SiLUs' float results read by Split, Add, Concat.
std::string c2f_model(int64_t size) {
  Built m;
  OnnxBuilder& b = m.b;
  b.input("x", {1, 3, size, size});
  const std::string y = m.conv_silu(m.quantize("x", 1.f / 255.f, 0), 1.f / 255.f, 0, 3, 16, 3, 0.04f, 40);
  b.initializer_i64("split", {2}, {8, 8});
  OnnxBuilder::attr_int(b.node("Split", {y, "split"}, {"y0", "y1"}), "axis", 1);
  const std::string z = m.conv_silu(m.quantize("y1", 0.03f, 12), 0.03f, 12, 8, 8, 3, 0.05f, 60);
  b.node("Add", {"y1", z}, {"w"});
  OnnxBuilder::attr_int(b.node("Concat", {"y0", "y1", "w"}, {"cat"}), "axis", 1);
  const std::string c = m.conv_silu(m.quantize("cat", 0.045f, 15), 0.045f, 15, 24, 16, 1, 0.04f, 30);
  auto* mp = b.node("MaxPool", {c}, {"mp"});
  OnnxBuilder::attr_ints(mp, "kernel_shape", {3, 3});
  OnnxBuilder::attr_ints(mp, "pads", {1, 1, 1, 1});
  b.initializer_i64("st", {1}, {4});
  b.initializer_i64("en", {1}, {12});
  b.initializer_i64("ax", {1}, {1});
  b.node("Slice", {c, "st", "en", "ax"}, {"sl"});
  OnnxBuilder::attr_int(b.node("Concat", {c, "mp", "sl"}, {"cat2"}), "axis", 1);
  const std::string out = m.conv_silu(m.quantize("cat2", 0.05f, 12), 0.05f, 12, 40, 8, 1, 0.05f, 50);
  const std::string yq = m.quantize(out, 0.05f, 20), k = std::to_string(m.id);
  b.node("DequantizeLinear", {yq, "qs" + k, "qz" + k}, {"y"});
  b.output("y");
  // The neck's upsampling of a SiLU read as float, quantized again (a second output).
  b.initializer("scales", {4}, {1.f, 1.f, 2.f, 2.f});
  b.node("Resize", {c, "", "scales"}, {"up"});
  const std::string uq = m.quantize("up", 0.04f, 30), uk = std::to_string(m.id);
  b.node("DequantizeLinear", {uq, "qs" + uk, "qz" + uk}, {"u"});
  b.output("u");
  return b.bytes();
}

struct Ran {
  std::vector<HostTensor> y;
  std::vector<std::string> ops;
};

Ran run(const std::string& bytes, const std::vector<HostTensor>& xs, bool fuse) {
  LoadOptions lo;
  lo.fuse_qdq = fuse;
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", lo);
  EXPECT_TRUE(m) << m.error().message;
  if (!m) return {};
  SessionOptions so;
  so.threads = 2;
  auto s = NativeSession::create(*m, so);
  EXPECT_TRUE(s) << s.error().message;
  if (!s) return {};
  std::vector<TensorRef> refs;
  for (const auto& x : xs) refs.push_back(x.ref());
  Ran r;
  auto st = (*s)->run(refs, r.y);
  EXPECT_TRUE(st) << st.error().message;
  for (const Node& n : (*m)->graph().nodes) r.ops.push_back(n.op_type);
  return r;
}

long count(const std::vector<std::string>& ops, const char* op) { return std::count(ops.begin(), ops.end(), op); }

TEST(Int8Dataflow, C2fBlockKeptInt8MatchesTheDequantizedGraph) {
  const int64_t size = 20;
  const std::string bytes = c2f_model(size);
  HostTensor x(DType::kFloat32, Shape{1, 3, size, size});
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  const Ran fused = run(bytes, {x}, true), plain = run(bytes, {x}, false);
  ASSERT_EQ(fused.y.size(), 2u);
  ASSERT_EQ(plain.y.size(), 2u);
  ASSERT_EQ(fused.y[0].shape(), plain.y[0].shape());
  ASSERT_EQ(fused.y[1].shape(), plain.y[1].shape());
  // Folded: the float Add, Concat reads, Sigmoid/Mul and every QuantizeLinear but the image's and
  // the two after the float MaxPool are gone; the Concats and the Split move bytes.
  EXPECT_EQ(count(fused.ops, "Int8Conv"), 4);
  EXPECT_EQ(count(fused.ops, "Add"), 0);
  EXPECT_EQ(count(fused.ops, "Int8AddTables"), 1);
  EXPECT_EQ(count(fused.ops, "Sigmoid"), 0);
  EXPECT_EQ(count(fused.ops, "DequantizeLinear"), 0);
  EXPECT_EQ(count(fused.ops, "QuantizeLinear"), 2);  // the image and the MaxPool's floats
  // Byte tables: the Split's parts into the Concat (2) and the bottleneck (1); cv2's SiLU as
  // float for the MaxPool, its bytes requantized for the second Concat directly and after the
  // Slice (2); the output's DequantizeLinear; after the Resize (of bytes) the requantized SiLU
  // and the second output's DequantizeLinear.
  EXPECT_EQ(count(fused.ops, "Int8Table"), 9);
  EXPECT_EQ(count(fused.ops, "Resize"), 1);
  EXPECT_EQ(count(plain.ops, "Int8Conv"), 0);
  std::string ops;
  for (const auto& o : fused.ops) ops += o + " ";
  SCOPED_TRACE(ops);
  // The two round once per convolution in different places (int32 sums against float), so a
  // value may land one step apart and move the next layers' by about one step each.
  for (int k = 0; k < 2; ++k) {
    const float step = k == 0 ? 0.05f : 0.04f;
    const int convs = k == 0 ? 4 : 3;
    double worst = 0;
    int64_t equal = 0;
    for (int64_t i = 0; i < fused.y[k].numel(); ++i) {
      const double d = std::fabs(fused.y[k].as<float>()[i] - plain.y[k].as<float>()[i]);
      worst = std::max(worst, d);
      equal += d == 0;
    }
    EXPECT_LE(worst, 2.01 * step * convs) << "output " << k;
    EXPECT_GT(equal, fused.y[k].numel() * 9 / 10) << "output " << k;
  }
}

// Add of two dequantized tensors, one broadcast, quantized again: Int8AddTables' broadcasting
// path, bit for bit the graph as written (no convolution: nothing rounds differently).
TEST(Int8Dataflow, BroadcastAddOfDequantizedTensorsIsExact) {
  OnnxBuilder b(13);
  b.input("a", {1, 4, 5, 6}, onnx::TensorProto::UINT8);
  b.input("b", {1, 4, 1, 6}, onnx::TensorProto::INT8);
  b.initializer("sa", {}, {0.02f});
  init_raw<uint8_t>(b, "za", {}, onnx::TensorProto::UINT8, {100});
  b.initializer("sb", {}, {0.035f});
  init_raw<int8_t>(b, "zb", {}, onnx::TensorProto::INT8, {-7});
  b.initializer("so", {}, {0.03f});
  init_raw<int8_t>(b, "zo", {}, onnx::TensorProto::INT8, {3});
  b.node("DequantizeLinear", {"a", "sa", "za"}, {"da"});
  b.node("DequantizeLinear", {"b", "sb", "zb"}, {"db"});
  b.node("Add", {"da", "db"}, {"s"});
  b.node("QuantizeLinear", {"s", "so", "zo"}, {"q"});
  b.node("Add", {"da", "da"}, {"f"});  // a float result too (no QuantizeLinear after)
  b.output("q", onnx::TensorProto::INT8);
  b.output("f");
  const std::string bytes = b.bytes();
  HostTensor a(DType::kUInt8, Shape{1, 4, 5, 6}), bb(DType::kInt8, Shape{1, 4, 1, 6});
  for (int64_t i = 0; i < a.numel(); ++i) a.as<uint8_t>()[i] = static_cast<uint8_t>(i * 37 % 256);
  for (int64_t i = 0; i < bb.numel(); ++i) bb.as<int8_t>()[i] = static_cast<int8_t>(i * 53 % 256 - 128);
  const Ran fused = run(bytes, {a, bb}, true), plain = run(bytes, {a, bb}, false);
  EXPECT_EQ(count(fused.ops, "Int8AddTables"), 2);
  EXPECT_EQ(count(fused.ops, "QuantizeLinear"), 0);
  ASSERT_EQ(fused.y.size(), 2u);
  ASSERT_EQ(plain.y.size(), 2u);
  ASSERT_EQ(fused.y[0].shape(), plain.y[0].shape());
  EXPECT_EQ(std::memcmp(fused.y[0].data(), plain.y[0].data(), static_cast<size_t>(plain.y[0].numel())), 0);
  ASSERT_EQ(fused.y[1].shape(), plain.y[1].shape());
  for (int64_t i = 0; i < plain.y[1].numel(); ++i) EXPECT_EQ(fused.y[1].as<float>()[i], plain.y[1].as<float>()[i]) << i;
}

// A tensor dequantized, moved (Split, nearest Resize) and quantized again with the same scale and
// zero point, as ONNX Runtime's quantizer writes the tensors around such ops: the composed byte
// table gives back each byte, so no table runs there; the readers read the moved bytes. Bit for
// bit the graph as written, and a requantization to other parameters still a table.
TEST(Int8Dataflow, AQuantizationThatUndoesItsDequantizationLeavesNoTable) {
  OnnxBuilder b(13);
  b.input("a", {1, 8, 4, 6}, onnx::TensorProto::UINT8);
  b.initializer("s", {}, {0.03f});
  init_raw<uint8_t>(b, "z", {}, onnx::TensorProto::UINT8, {12});
  b.initializer("s2", {}, {0.05f});
  init_raw<uint8_t>(b, "z2", {}, onnx::TensorProto::UINT8, {3});
  b.node("DequantizeLinear", {"a", "s", "z"}, {"d"});
  b.initializer_i64("split", {2}, {4, 4});
  OnnxBuilder::attr_int(b.node("Split", {"d", "split"}, {"p0", "p1"}), "axis", 1);
  b.initializer("scales", {4}, {1.f, 1.f, 2.f, 2.f});
  b.node("Resize", {"d", "", "scales"}, {"up"});
  b.node("QuantizeLinear", {"p1", "s", "z"}, {"q1"});    // the same parameters: the bytes
  b.node("QuantizeLinear", {"up", "s", "z"}, {"q2"});    // the same parameters: the bytes
  b.node("QuantizeLinear", {"p0", "s2", "z2"}, {"q0"});  // others: a table
  b.node("DequantizeLinear", {"q1", "s", "z"}, {"o1"});
  b.node("DequantizeLinear", {"q2", "s", "z"}, {"o2"});
  b.output("o1");
  b.output("o2");
  b.output("q0", onnx::TensorProto::UINT8);
  const std::string bytes = b.bytes();
  HostTensor a(DType::kUInt8, Shape{1, 8, 4, 6});
  for (int64_t i = 0; i < a.numel(); ++i) a.as<uint8_t>()[i] = static_cast<uint8_t>(i * 37 % 256);
  const Ran fused = run(bytes, {a}, true), plain = run(bytes, {a}, false);
  EXPECT_EQ(count(fused.ops, "QuantizeLinear"), 0);
  EXPECT_EQ(count(fused.ops, "DequantizeLinear"), 0);
  // q0's requantization and the two outputs' dequantizations; none for q1 and q2 (5 before).
  EXPECT_EQ(count(fused.ops, "Int8Table"), 3);
  ASSERT_EQ(fused.y.size(), 3u);
  ASSERT_EQ(plain.y.size(), 3u);
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(fused.y[k].shape(), plain.y[k].shape()) << k;
    for (int64_t i = 0; i < plain.y[k].numel(); ++i) EXPECT_EQ(fused.y[k].as<float>()[i], plain.y[k].as<float>()[i]) << k << " " << i;
  }
  ASSERT_EQ(fused.y[2].shape(), plain.y[2].shape());
  EXPECT_EQ(std::memcmp(fused.y[2].data(), plain.y[2].data(), static_cast<size_t>(plain.y[2].numel())), 0);
}

// The sum of two dequantized tensors read as float and quantized (C2f with two bottlenecks: the
// next bottleneck's Add reads the floats, its convolution and the Concat the bytes): the bytes
// come from a second Int8AddTables of the same inputs, no QuantizeLinear of the floats; both
// bit for bit the graph as written.
TEST(Int8Dataflow, QuantizedSumBesideItsFloatsIsASecondAddTables) {
  OnnxBuilder b(13);
  b.input("a", {1, 8, 5, 7}, onnx::TensorProto::UINT8);
  b.input("b", {1, 8, 5, 7}, onnx::TensorProto::UINT8);
  b.initializer("sa", {}, {0.02f});
  init_raw<uint8_t>(b, "za", {}, onnx::TensorProto::UINT8, {100});
  b.initializer("sb", {}, {0.035f});
  init_raw<uint8_t>(b, "zb", {}, onnx::TensorProto::UINT8, {20});
  b.initializer("so", {}, {0.03f});
  init_raw<uint8_t>(b, "zo", {}, onnx::TensorProto::UINT8, {60});
  b.node("DequantizeLinear", {"a", "sa", "za"}, {"da"});
  b.node("DequantizeLinear", {"b", "sb", "zb"}, {"db"});
  b.node("Add", {"da", "db"}, {"s"});
  b.node("QuantizeLinear", {"s", "so", "zo"}, {"q"});
  b.output("q", onnx::TensorProto::UINT8);
  b.output("s");
  const std::string bytes = b.bytes();
  HostTensor a(DType::kUInt8, Shape{1, 8, 5, 7}), bb(DType::kUInt8, Shape{1, 8, 5, 7});
  for (int64_t i = 0; i < a.numel(); ++i) a.as<uint8_t>()[i] = static_cast<uint8_t>(i * 37 % 256);
  for (int64_t i = 0; i < bb.numel(); ++i) bb.as<uint8_t>()[i] = static_cast<uint8_t>(i * 53 % 256);
  const Ran fused = run(bytes, {a, bb}, true), plain = run(bytes, {a, bb}, false);
  EXPECT_EQ(count(fused.ops, "Int8AddTables"), 2);
  EXPECT_EQ(count(fused.ops, "QuantizeLinear"), 0);
  ASSERT_EQ(fused.y.size(), 2u);
  ASSERT_EQ(plain.y.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(fused.y[k].shape(), plain.y[k].shape());
    EXPECT_EQ(std::memcmp(fused.y[k].data(), plain.y[k].data(), plain.y[k].bytes()), 0) << "output " << k;
  }
}

// YOLOv8's C2f with two bottlenecks: the second residual Add sums the first one's floats (an
// Add of two dequantized tensors, read as bytes elsewhere too) and a third dequantized tensor,
// and only the Concat's QuantizeLinear reads the result. One Int8AddTables of three inputs,
// (ta + tb) + tc, writes those bytes; float sum and bytes bit for bit the graph as written.
TEST(Int8Dataflow, SumOfASumAndAThirdTableIsOneAddTablesOfThree) {
  OnnxBuilder b(13);
  for (const char* in : {"a", "b", "c"}) b.input(in, {1, 8, 5, 7}, onnx::TensorProto::UINT8);
  b.initializer("sa", {}, {0.02f});
  init_raw<uint8_t>(b, "za", {}, onnx::TensorProto::UINT8, {100});
  b.initializer("sb", {}, {0.035f});
  init_raw<uint8_t>(b, "zb", {}, onnx::TensorProto::UINT8, {20});
  b.initializer("sc", {}, {0.017f});
  init_raw<uint8_t>(b, "zc", {}, onnx::TensorProto::UINT8, {140});
  b.initializer("so", {}, {0.05f});
  init_raw<uint8_t>(b, "zo", {}, onnx::TensorProto::UINT8, {60});
  b.node("DequantizeLinear", {"a", "sa", "za"}, {"da"});
  b.node("DequantizeLinear", {"b", "sb", "zb"}, {"db"});
  b.node("DequantizeLinear", {"c", "sc", "zc"}, {"dc"});
  b.node("Add", {"da", "db"}, {"s"});
  b.node("QuantizeLinear", {"s", "so", "zo"}, {"qs"});  // the first sum's bytes, read elsewhere
  b.node("Add", {"dc", "s"}, {"t"});                    // the third table on either side
  b.node("QuantizeLinear", {"t", "so", "zo"}, {"q"});
  b.node("Add", {"s", "dc"}, {"f"});  // the same sum read as float
  b.output("q", onnx::TensorProto::UINT8);
  b.output("qs", onnx::TensorProto::UINT8);
  b.output("f");
  const std::string bytes = b.bytes();
  HostTensor a(DType::kUInt8, Shape{1, 8, 5, 7}), bb(DType::kUInt8, Shape{1, 8, 5, 7}), c(DType::kUInt8, Shape{1, 8, 5, 7});
  for (int64_t i = 0; i < a.numel(); ++i) {
    a.as<uint8_t>()[i] = static_cast<uint8_t>(i * 37 % 256);
    bb.as<uint8_t>()[i] = static_cast<uint8_t>(i * 53 % 256);
    c.as<uint8_t>()[i] = static_cast<uint8_t>(i * 91 % 256);
  }
  const Ran fused = run(bytes, {a, bb, c}, true), plain = run(bytes, {a, bb, c}, false);
  EXPECT_EQ(count(fused.ops, "Add"), 0);
  EXPECT_EQ(count(fused.ops, "QuantizeLinear"), 0);
  EXPECT_EQ(count(fused.ops, "Int8AddTables"), 3);  // qs, and q and f of three inputs
  ASSERT_EQ(fused.y.size(), 3u);
  ASSERT_EQ(plain.y.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ(fused.y[k].shape(), plain.y[k].shape());
    EXPECT_EQ(std::memcmp(fused.y[k].data(), plain.y[k].data(), plain.y[k].bytes()), 0) << "output " << k;
  }
}

// The layout conversion in front of an int8 stem: uint8 NCHW -> NHWC with few channels (the
// Transpose kernel's few-rows path), against the element by element reference.
TEST(Int8Dataflow, ByteTransposeToChannelsLastMatchesTheNaiveReference) {
  for (const Shape& s : {Shape{1, 3, 37, 41}, Shape{2, 16, 5, 7}, Shape{1, 1, 3, 3}}) {
    OnnxBuilder b(13);
    b.input("x", {s[0], s[1], s[2], s[3]}, onnx::TensorProto::UINT8);
    OnnxBuilder::attr_ints(b.node("Transpose", {"x"}, {"y"}), "perm", {0, 2, 3, 1});
    b.output("y", onnx::TensorProto::UINT8);
    HostTensor x(DType::kUInt8, s);
    for (int64_t i = 0; i < x.numel(); ++i) x.as<uint8_t>()[i] = static_cast<uint8_t>(i * 31 + 7);
    const Ran r = run(b.bytes(), {x}, true);
    ASSERT_EQ(r.y.size(), 1u);
    ASSERT_EQ(r.y[0].shape(), (Shape{s[0], s[2], s[3], s[1]}));
    for (int64_t n = 0; n < s[0]; ++n)
      for (int64_t c = 0; c < s[1]; ++c)
        for (int64_t h = 0; h < s[2]; ++h)
          for (int64_t w = 0; w < s[3]; ++w)
            ASSERT_EQ(r.y[0].as<uint8_t>()[((n * s[2] + h) * s[3] + w) * s[1] + c], x.as<uint8_t>()[((n * s[1] + c) * s[2] + h) * s[3] + w]);
  }
}

// Each byte lookup variant this processor runs against the plain loop, every byte value looked
// up, lengths around the 32- and 64-byte vectors (the tails).
TEST(Int8Dataflow, ByteTableVariantsMatchThePlainLookup) {
  std::mt19937 rng(3);
  std::vector<uint8_t> table(256), x(300);
  for (auto& v : table) v = static_cast<uint8_t>(rng());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>((i * 167 + 13) % 256);  // each value in the first 256
  std::vector<std::pair<std::string, ops::byte_table::LookupFn>> variants;
#if defined(__x86_64__)
  if (cpu::detected_isa() >= cpu::Isa::kAvx512) variants.emplace_back("avx512_bw", ops::byte_table::lookup_avx512_bw);
  if (cpu::detected_isa() >= cpu::Isa::kAvx512 && ops::byte_table::has_vbmi()) variants.emplace_back("avx512_vbmi", ops::byte_table::lookup_avx512_vbmi);
  if (cpu::detected_isa() >= cpu::Isa::kAvx2) variants.emplace_back("avx2", ops::byte_table::lookup_avx2);
#endif
  if (variants.empty()) GTEST_SKIP() << "only the plain lookup runs here";
  for (const auto& [name, fn] : variants)
    for (int64_t n : {0, 1, 31, 32, 33, 63, 64, 65, 130, 300}) {
      std::vector<uint8_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n) + 1, 0xAB);
      ops::byte_table::lookup_baseline(x.data(), want.data(), n, table.data());
      fn(x.data(), got.data(), n, table.data());
      EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << name << " n=" << n;
      EXPECT_EQ(got[static_cast<size_t>(n)], 0xAB) << name << " wrote past n=" << n;
    }
}

// Int8Table to float, each variant against the plain loop, lengths around the 8- and 16-float vectors.
TEST(Int8Dataflow, FloatTableVariantsMatchThePlainLookup) {
#if defined(__x86_64__)
  std::vector<std::pair<std::string, ops::byte_table::LookupFloatFn>> variants;
  if (cpu::detected_isa() >= cpu::Isa::kAvx512) variants.emplace_back("avx512", ops::byte_table::lookup_float_avx512);
  if (cpu::detected_isa() >= cpu::Isa::kAvx2) variants.emplace_back("avx2", ops::byte_table::lookup_float_avx2);
  if (variants.empty()) GTEST_SKIP() << "only the plain lookup runs here";
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> u(-6.f, 6.f);
  std::vector<float> table(256);
  for (auto& v : table) v = u(rng);
  std::vector<uint8_t> x(301);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(i < 256 ? i : rng());
  for (const auto& [name, fn] : variants)
    for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 256, 301}) {
      std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n) + 1, -1.f);
      ops::byte_table::lookup_float_baseline(x.data(), want.data(), n, table.data());
      fn(x.data(), got.data(), n, table.data());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(want[static_cast<size_t>(i)], got[static_cast<size_t>(i)]) << name << " n=" << n << " i=" << i;
      EXPECT_EQ(got[static_cast<size_t>(n)], -1.f) << name << " wrote past n=" << n;
    }
#else
  GTEST_SKIP() << "only the plain lookup runs here";
#endif
}

// Int8AddTables' flat loops, each variant against the plain one: floats bit for bit, and
// quantized to uint8 and int8 (sums that fall on halves of a step included: round half to even).
TEST(Int8Dataflow, AddTablesVariantsMatchThePlainLoops) {
#if defined(__x86_64__)
  struct Variant {
    std::string name;
    ops::byte_table::AddFloatFn add_float;
    ops::byte_table::AddBytesFn add_bytes;
    ops::byte_table::Add3FloatFn add3_float;
    ops::byte_table::Add3BytesFn add3_bytes;
  };
  std::vector<Variant> variants;
  if (cpu::detected_isa() >= cpu::Isa::kAvx512)
    variants.push_back({"avx512", ops::byte_table::add_float_avx512, ops::byte_table::add_bytes_avx512, ops::byte_table::add3_float_avx512,
                        ops::byte_table::add3_bytes_avx512});
  if (cpu::detected_isa() >= cpu::Isa::kAvx2)
    variants.push_back({"avx2", ops::byte_table::add_float_avx2, ops::byte_table::add_bytes_avx2, ops::byte_table::add3_float_avx2,
                        ops::byte_table::add3_bytes_avx2});
  if (variants.empty()) GTEST_SKIP() << "only the plain loops run here";
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-6.f, 6.f);
  std::vector<float> ta(256), tb(256);
  for (int i = 0; i < 256; ++i) {
    ta[static_cast<size_t>(i)] = i % 5 == 0 ? 0.125f * static_cast<float>(i % 40 - 20) : u(rng);  // exact halves of 0.25
    tb[static_cast<size_t>(i)] = i % 7 == 0 ? 0.f : u(rng);
  }
  std::vector<float> tc(256);
  for (int i = 0; i < 256; ++i) tc[static_cast<size_t>(i)] = i % 3 == 0 ? 0.5f : u(rng);
  std::vector<uint8_t> a(301), b(301), c(301);
  for (auto& v : a) v = static_cast<uint8_t>(rng());
  for (auto& v : b) v = static_cast<uint8_t>(rng());
  for (auto& v : c) v = static_cast<uint8_t>(rng());
  for (const Variant& v : variants)
  for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 64, 301}) {
    std::vector<float> fw(static_cast<size_t>(n)), fg(static_cast<size_t>(n) + 1, -1.f);
    ops::byte_table::add_float_baseline(a.data(), b.data(), n, ta.data(), tb.data(), fw.data());
    v.add_float(a.data(), b.data(), n, ta.data(), tb.data(), fg.data());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(fw[static_cast<size_t>(i)], fg[static_cast<size_t>(i)]) << v.name << " n=" << n << " i=" << i;
    EXPECT_EQ(fg[static_cast<size_t>(n)], -1.f) << v.name << " wrote past n=" << n;
    for (const ops::byte_table::AddTables q : {ops::byte_table::AddTables{0.25f, 3.f, 0.f, 255.f}, ops::byte_table::AddTables{0.05f, -4.f, -128.f, 127.f}}) {
      std::vector<uint8_t> w(static_cast<size_t>(n)), g(static_cast<size_t>(n) + 1, 0xCD);
      ops::byte_table::add_bytes_baseline(a.data(), b.data(), n, ta.data(), tb.data(), q, w.data());
      v.add_bytes(a.data(), b.data(), n, ta.data(), tb.data(), q, g.data());
      EXPECT_TRUE(std::equal(w.begin(), w.end(), g.begin())) << v.name << " n=" << n << " lo=" << q.lo;
      EXPECT_EQ(g[static_cast<size_t>(n)], 0xCD) << v.name << " wrote past n=" << n;
    }
    // Three tables: (ta[a] + tb[b]) + tc[c], as float and as bytes.
    std::vector<float> f3w(static_cast<size_t>(n)), f3g(static_cast<size_t>(n) + 1, -1.f);
    ops::byte_table::add3_float_baseline(a.data(), b.data(), c.data(), n, ta.data(), tb.data(), tc.data(), f3w.data());
    v.add3_float(a.data(), b.data(), c.data(), n, ta.data(), tb.data(), tc.data(), f3g.data());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(f3w[static_cast<size_t>(i)], f3g[static_cast<size_t>(i)]) << v.name << " three, n=" << n << " i=" << i;
      ASSERT_EQ(f3w[static_cast<size_t>(i)], (ta[a[static_cast<size_t>(i)]] + tb[b[static_cast<size_t>(i)]]) + tc[c[static_cast<size_t>(i)]]);
    }
    EXPECT_EQ(f3g[static_cast<size_t>(n)], -1.f) << v.name << " three: wrote past n=" << n;
    for (const ops::byte_table::AddTables q : {ops::byte_table::AddTables{0.25f, 3.f, 0.f, 255.f}, ops::byte_table::AddTables{0.05f, -4.f, -128.f, 127.f}}) {
      std::vector<uint8_t> w(static_cast<size_t>(n)), g(static_cast<size_t>(n) + 1, 0xCD);
      ops::byte_table::add3_bytes_baseline(a.data(), b.data(), c.data(), n, ta.data(), tb.data(), tc.data(), q, w.data());
      v.add3_bytes(a.data(), b.data(), c.data(), n, ta.data(), tb.data(), tc.data(), q, g.data());
      EXPECT_TRUE(std::equal(w.begin(), w.end(), g.begin())) << v.name << " three, n=" << n << " lo=" << q.lo;
      EXPECT_EQ(g[static_cast<size_t>(n)], 0xCD) << v.name << " three: wrote past n=" << n;
    }
  }
#else
  GTEST_SKIP() << "only the plain loops run here";
#endif
}

// Int8AddTables quantized by one lookup in the table of all pairs: every pair of bytes, each
// variant, the same bytes as the add-divide-round loop (uint8 and int8 results, sums on halves
// of a step), tails below 16 included.
TEST(Int8Dataflow, PairTableGivesTheBytesOfTheQuantizedSum) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-6.f, 6.f);
  std::vector<float> ta(256), tb(256);
  for (int i = 0; i < 256; ++i) {
    ta[static_cast<size_t>(i)] = i % 5 == 0 ? 0.125f * static_cast<float>(i % 40 - 20) : u(rng);
    tb[static_cast<size_t>(i)] = i % 7 == 0 ? 0.f : u(rng);
  }
  std::vector<uint8_t> a(65536 + 7), b(a.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i >> 8), b[i] = static_cast<uint8_t>(i * 7 + 3);
  std::vector<std::pair<std::string, ops::byte_table::AddPairsFn>> variants{{"baseline", ops::byte_table::add_pairs_baseline}};
#if defined(__x86_64__)
  if (cpu::detected_isa() >= cpu::Isa::kAvx512) variants.emplace_back("avx512", ops::byte_table::add_pairs_avx512);
  if (cpu::detected_isa() >= cpu::Isa::kAvx2) variants.emplace_back("avx2", ops::byte_table::add_pairs_avx2);
#endif
  for (const ops::byte_table::AddTables q : {ops::byte_table::AddTables{0.05f, 17.f, 0.f, 255.f}, ops::byte_table::AddTables{0.0625f, -3.f, -128.f, 127.f}}) {
    std::vector<uint8_t> pairs(ops::byte_table::kPairTableBytes);
    ops::byte_table::fill_pair_table(ta.data(), tb.data(), q, pairs.data());
    for (const auto& [name, fn] : variants)
      for (int64_t n : {int64_t{0}, int64_t{5}, int64_t{16}, static_cast<int64_t>(a.size())}) {
        std::vector<uint8_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n) + 1, 0xAB);
        ops::byte_table::add_bytes_baseline(a.data(), b.data(), n, ta.data(), tb.data(), q, want.data());
        fn(a.data(), b.data(), n, pairs.data(), got.data());
        EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << name << " n=" << n << " lo=" << q.lo;
        EXPECT_EQ(got[static_cast<size_t>(n)], 0xAB) << name << " wrote past n=" << n;
      }
  }
}

// Int8AddTables to bytes by the tables' byte planes (AVX-512 with VBMI, no gather): every pair of
// bytes and random triples, dense at lengths around the 64-byte vector, and in rows at strides
// (rows narrower than a vector in 16-byte pieces four to a vector), the bytes of the add-divide-
// round loops (uint8 and int8 results, sums on halves of a step); nothing written past a row.
TEST(Int8Dataflow, AddPlanesGiveTheBytesOfTheQuantizedSum) {
#if defined(__x86_64__)
  if (cpu::detected_isa() < cpu::Isa::kAvx512 || !ops::byte_table::has_vbmi()) GTEST_SKIP() << "no AVX-512 VBMI on this processor";
  namespace bt = ops::byte_table;
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> u(-6.f, 6.f);
  std::vector<float> ta(256), tb(256), tc(256);
  for (int i = 0; i < 256; ++i) {
    ta[static_cast<size_t>(i)] = i % 5 == 0 ? 0.125f * static_cast<float>(i % 40 - 20) : u(rng);  // exact halves of 0.25
    tb[static_cast<size_t>(i)] = i % 7 == 0 ? 0.f : u(rng);
    tc[static_cast<size_t>(i)] = i % 3 == 0 ? 0.5f : i == 255 ? -0.f : u(rng);
  }
  const bt::BytePlanes pa = bt::byte_planes(ta.data()), pb = bt::byte_planes(tb.data()), pc = bt::byte_planes(tc.data());
  std::vector<uint8_t> a(65536 + 7), b(a.size()), c(a.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i >> 8), b[i] = static_cast<uint8_t>(i * 7 + 3), c[i] = static_cast<uint8_t>(rng());
  for (const bt::AddTables q : {bt::AddTables{0.05f, 17.f, 0.f, 255.f}, bt::AddTables{0.0625f, -3.f, -128.f, 127.f}}) {
    for (const bool three : {false, true})
      for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{16}, int64_t{63}, int64_t{64}, int64_t{65}, int64_t{200}, static_cast<int64_t>(a.size())}) {
        std::vector<uint8_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n) + 1, 0xAB);
        if (three) bt::add3_bytes_baseline(a.data(), b.data(), c.data(), n, ta.data(), tb.data(), tc.data(), q, want.data());
        else bt::add_bytes_baseline(a.data(), b.data(), n, ta.data(), tb.data(), q, want.data());
        bt::add_planes_avx512_vbmi(a.data(), b.data(), three ? c.data() : nullptr, n, pa, pb, pc, q, got.data());
        EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << "three " << three << " n=" << n << " lo=" << q.lo;
        EXPECT_EQ(got[static_cast<size_t>(n)], 0xAB) << "wrote past n=" << n;
      }
    // Rows: input k's rows cols + 13 + 8 k bytes apart, the output's cols + 7.
    for (const bool three : {false, true})
      for (int64_t cols : {1, 5, 16, 24, 32, 48, 64, 70, 130}) {
        const int64_t rows = 9, ys = cols + 7;
        const int64_t xs[3] = {cols + 13, cols + 21, cols + 29};
        const uint8_t* const in[3] = {a.data(), b.data(), three ? c.data() : nullptr};
        std::vector<uint8_t> got(static_cast<size_t>(rows * ys), 0xAB);
        bt::add_planes_rows_avx512_vbmi(in, xs, rows, cols, pa, pb, pc, q, got.data(), ys);
        for (int64_t r = 0; r < rows; ++r) {
          std::vector<uint8_t> want(static_cast<size_t>(cols));
          if (three)
            bt::add3_bytes_baseline(a.data() + r * xs[0], b.data() + r * xs[1], c.data() + r * xs[2], cols, ta.data(), tb.data(), tc.data(), q, want.data());
          else bt::add_bytes_baseline(a.data() + r * xs[0], b.data() + r * xs[1], cols, ta.data(), tb.data(), q, want.data());
          EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin() + r * ys)) << "three " << three << " cols " << cols << " row " << r;
          for (int64_t i = cols; i < ys; ++i) ASSERT_EQ(got[static_cast<size_t>(r * ys + i)], 0xAB) << "cols " << cols << " wrote past row " << r;
        }
      }
  }
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

// Int8AddTables reading its sources strided (kSrcPixelStrides: the parts of a Split of bytes
// left in its input, exec/plan_concat.cpp): rows of c bytes from wider pixels give the dense
// kernel's bytes and floats; with a broadcast input it refuses (the planner then gives it dense
// copies).
TEST(Int8Dataflow, AddTablesReadStridedSourcesAsDenseOnesAndRefuseThemWhenBroadcasting) {
  const int64_t rows = 37, c = 24, sa = 40, sb = 56;  // a and b: c of sa and sb bytes a pixel
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> u(-4.f, 4.f);
  Attribute ta, tb;
  ta.kind = tb.kind = Attribute::Kind::kFloats;
  for (int i = 0; i < 256; ++i) ta.floats.push_back(u(rng)), tb.floats.push_back(u(rng));
  std::vector<uint8_t> a(static_cast<size_t>(rows * sa)), b(static_cast<size_t>(rows * sb)), da(static_cast<size_t>(rows * c)), db(da.size());
  for (auto& v : a) v = static_cast<uint8_t>(rng());
  for (auto& v : b) v = static_cast<uint8_t>(rng());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < c; ++i) da[static_cast<size_t>(r * c + i)] = a[static_cast<size_t>(r * sa + i)], db[static_cast<size_t>(r * c + i)] = b[static_cast<size_t>(r * sb + i)];
  const OpSchema* schema = builtin_op_registry().find("Int8AddTables", 17);
  ASSERT_NE(schema, nullptr);
  for (const int64_t out_dtype : {1, 2}) {  // float32, uint8
    auto make = [&](bool strided, const Shape& b_shape) {
      Node n;
      n.op_type = "Int8AddTables";
      n.name = "add";
      n.attrs.set("table_a", ta);
      n.attrs.set("table_b", tb);
      Attribute o;
      o.i = out_dtype;
      n.attrs.set("out_dtype", o);
      Attribute sc;
      sc.kind = Attribute::Kind::kFloat;
      sc.f = 0.05f;
      n.attrs.set("out_scale", sc);
      Attribute z;
      z.i = 128;
      n.attrs.set("out_zero_point", z);
      if (strided) {
        Attribute st;
        st.kind = Attribute::Kind::kInts;
        st.ints = {sa, sb};
        n.attrs.set(kSrcPixelStrides, st);
      }
      return n;
    };
    const Shape shape{1, rows, 1, c};
    const DType out_type = out_dtype == 1 ? DType::kFloat32 : DType::kUInt8;
    const std::vector<ValueType> ins{{DType::kUInt8, shape}, {DType::kUInt8, shape}}, outs{{out_type, shape}};
    const std::vector<const HostTensor*> consts{nullptr, nullptr};
    const Node dense_node = make(false, shape), strided_node = make(true, shape);
    auto dense = schema->create(OpContext{dense_node, 17, ins, consts, outs});
    auto strided = schema->create(OpContext{strided_node, 17, ins, consts, outs});
    ASSERT_TRUE(dense) << dense.error().message;
    ASSERT_TRUE(strided) << strided.error().message;
    HostTensor want(out_type, shape), got(out_type, shape);
    const TensorRef in_dense[2] = {TensorRef{DType::kUInt8, shape, da.data()}, TensorRef{DType::kUInt8, shape, db.data()}};
    const TensorRef in_strided[2] = {TensorRef{DType::kUInt8, shape, a.data()}, TensorRef{DType::kUInt8, shape, b.data()}};
    const TensorRef w = want.ref(), g = got.ref();
    ASSERT_TRUE(run_once(**dense, in_dense, std::span<const TensorRef>(&w, 1)));
    ASSERT_TRUE(run_once(**strided, in_strided, std::span<const TensorRef>(&g, 1)));
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.bytes()), 0) << "out_dtype " << out_dtype;
    // b broadcast over the rows: refused with strided sources.
    const Shape row{1, 1, 1, c};
    const std::vector<ValueType> bins{{DType::kUInt8, shape}, {DType::kUInt8, row}};
    const Node broadcast_node = make(true, row);
    auto broadcast = schema->create(OpContext{broadcast_node, 17, bins, consts, outs});
    EXPECT_FALSE(broadcast) << "out_dtype " << out_dtype;
  }
}

// The image's QuantizeLinear written channels-last in one pass (cpu/quantize_nhwc.h) against
// QuantizeLinear's definition element by element: rows longer than a block, channels more than
// a block's, halves of a step (round half to even), saturation, NaN and infinities.
TEST(Int8Dataflow, QuantizeToChannelsLastMatchesQuantizeLinearElementByElement) {
  const float scale = 0.25f;
  for (const bool is_signed : {false, true})
    for (const Shape& s : {Shape{1, 3, 5, 300}, Shape{2, 3, 4, 7}, Shape{1, 20, 3, 5}, Shape{1, 1, 2, 2}}) {
      const int32_t zero = is_signed ? -3 : 9;
      std::vector<float> x(static_cast<size_t>(s.numel()));
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int64_t>(i * 37 % 301) - 150) * 0.125f;  // halves of a step
      x[1] = std::nanf("");
      x[2] = INFINITY;
      x[3] = -INFINITY;
      std::vector<uint8_t> y(x.size(), 0xAB);
      ops::quantize_to_nhwc(x.data(), s[0], s[1], s[2], s[3], scale, zero, is_signed, y.data(), 2);
      const float lo = is_signed ? -128.f : 0.f, hi = is_signed ? 127.f : 255.f;
      for (int64_t n = 0; n < s[0]; ++n)
        for (int64_t c = 0; c < s[1]; ++c)
          for (int64_t h = 0; h < s[2]; ++h)
            for (int64_t w = 0; w < s[3]; ++w) {
              const float v = x[static_cast<size_t>(((n * s[1] + c) * s[2] + h) * s[3] + w)];
              float q = std::nearbyint(v / scale) + static_cast<float>(zero);  // ONNX: saturate(round(x / y_scale) + y_zero_point)
              q = std::isnan(q) ? 0.f : std::clamp(q, lo, hi);
              const auto want = static_cast<uint8_t>(is_signed ? static_cast<uint8_t>(static_cast<int8_t>(q)) : static_cast<uint8_t>(q));
              ASSERT_EQ(y[static_cast<size_t>(((n * s[2] + h) * s[3] + w) * s[1] + c)], want)
                  << "shape " << s[0] << "x" << s[1] << "x" << s[2] << "x" << s[3] << " signed " << is_signed << " at " << n << "," << c << "," << h << "," << w;
            }
    }
}

// The three-channel row each variant writes (quantize_to_nhwc above takes one of them), against
// the element by element definition: lengths around the 16-pixel vectors and the 256-pixel
// blocks, NaN, infinities, halves of a step, both signs of result.
TEST(Int8Dataflow, QuantizeThreeChannelRowVariantsMatchQuantizeLinear) {
  std::vector<std::pair<std::string, ops::Quantize3RowFn>> variants{{"baseline", ops::quantize3_row_baseline}};
#if defined(__x86_64__)
  if (cpu::detected_isa() >= cpu::Isa::kAvx2) variants.emplace_back("avx2", ops::quantize3_row_avx2);
  if (cpu::detected_isa() >= cpu::Isa::kAvx512 && __builtin_cpu_supports("avx512vbmi")) variants.emplace_back("avx512_vbmi", ops::quantize3_row_avx512_vbmi);
#endif
  const int64_t plane = 600;
  std::vector<float> x(3 * plane);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int64_t>(i * 41 % 333) - 166) * 0.125f;
  x[5] = std::nanf("");
  x[plane + 6] = INFINITY;
  x[2 * plane + 7] = -INFINITY;
  for (const bool is_signed : {false, true}) {
    const int32_t zero = is_signed ? 4 : 100;
    const float scale = 0.25f, lo = is_signed ? -128.f : 0.f, hi = is_signed ? 127.f : 255.f;
    for (const auto& [name, fn] : variants)
      for (int64_t len : {0, 1, 7, 8, 9, 15, 16, 17, 255, 256, 257, 600}) {
        std::vector<uint8_t> y(static_cast<size_t>(3 * len) + 1, 0xAB);
        fn(x.data(), plane, len, scale, zero, is_signed, y.data());
        for (int64_t p = 0; p < len; ++p)
          for (int64_t c = 0; c < 3; ++c) {
            float q = std::nearbyint(x[static_cast<size_t>(c * plane + p)] / scale) + static_cast<float>(zero);
            q = std::isnan(q) ? 0.f : std::clamp(q, lo, hi);
            const auto want = is_signed ? static_cast<uint8_t>(static_cast<int8_t>(q)) : static_cast<uint8_t>(q);
            ASSERT_EQ(y[static_cast<size_t>(3 * p + c)], want) << name << " len " << len << " pixel " << p << " channel " << c << " signed " << is_signed;
          }
        EXPECT_EQ(y[static_cast<size_t>(3 * len)], 0xAB) << name << " wrote past len " << len;
      }
  }
}

// The conversions around an Int8Conv computed in float32 (cpu/int8_float_convert.h), each
// variant the processor can run against DequantizeLinear's and QuantizeLinear's element by
// element definitions: lengths around the vectors (8, 16, 32 values), both signs, zero points,
// NaN, infinities, halves of a step, saturation, and with a table (a fused SiLU's) and without.
TEST(Int8Dataflow, FloatConversionVariantsMatchDequantizeAndQuantizeLinear) {
  namespace f = ops::int8_float;
  struct Variant {
    const char* name;
    cpu::Isa isa;
    f::DequantizeFn dequantize;
    f::QuantizeFn quantize;
  };
  std::vector<Variant> variants{{"baseline", cpu::Isa::kBaseline, f::dequantize_baseline, f::quantize_baseline}};
#if defined(__x86_64__)
  variants.push_back({"avx2", cpu::Isa::kAvx2, f::dequantize_avx2, f::quantize_avx2});
  variants.push_back({"avx512", cpu::Isa::kAvx512, f::dequantize_avx512, f::quantize_avx512});
#endif
  std::vector<float> x(700);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int64_t>(i * 37 % 1201) - 600) * 0.125f;  // halves of a step, past both ends
  x[3] = std::nanf("");
  x[40] = INFINITY;
  x[41] = -INFINITY;
  std::vector<uint8_t> bytes(700);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 89 % 256);
  std::vector<uint8_t> table(256);
  for (size_t b = 0; b < 256; ++b) table[b] = static_cast<uint8_t>((b * 7 + 3) % 256);
  for (const auto& v : variants) {
    if (cpu::detected_isa() < v.isa) continue;
    for (const bool is_signed : {false, true}) {
      const f::Quantization q{0.25f, is_signed ? -5 : 130, is_signed};
      const float lo = is_signed ? -128.f : 0.f, hi = is_signed ? 127.f : 255.f;
      for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 700}) {
        std::vector<float> d(static_cast<size_t>(n) + 1, -7.f);
        v.dequantize(bytes.data(), n, q, d.data());
        for (int64_t i = 0; i < n; ++i) {
          const int32_t b = is_signed ? static_cast<int8_t>(bytes[static_cast<size_t>(i)]) : bytes[static_cast<size_t>(i)];
          ASSERT_EQ(d[static_cast<size_t>(i)], static_cast<float>(b - q.zero_point) * q.scale) << v.name << " n " << n << " at " << i;
        }
        EXPECT_EQ(d[static_cast<size_t>(n)], -7.f) << v.name << " wrote past " << n;
        for (const bool with_table : {false, true}) {
          std::vector<uint8_t> y(static_cast<size_t>(n) + 1, 0xAB);
          v.quantize(x.data(), n, q, with_table ? table.data() : nullptr, y.data());
          for (int64_t i = 0; i < n; ++i) {
            float r = std::nearbyint(x[static_cast<size_t>(i)] / q.scale) + static_cast<float>(q.zero_point);
            r = std::isnan(r) ? 0.f : std::clamp(r, lo, hi);
            uint8_t want = is_signed ? static_cast<uint8_t>(static_cast<int8_t>(r)) : static_cast<uint8_t>(r);
            if (with_table) want = table[want];
            ASSERT_EQ(y[static_cast<size_t>(i)], want) << v.name << " n " << n << " at " << i << " signed " << is_signed << " table " << with_table;
          }
          EXPECT_EQ(y[static_cast<size_t>(n)], 0xAB) << v.name << " wrote past " << n;
        }
      }
    }
  }
}

// A QDQ model's image into its first int8 convolution: quantized straight into channels-last (no
// layout conversion of the bytes before the convolution), the same result as plain NCHW all the
// way; where the quantized image is also read by something else it stays plain.
TEST(Int8Dataflow, ImageQuantizedStraightIntoChannelsLast) {
  const int64_t size = 19;
  for (const bool also_output : {false, true}) {
    SCOPED_TRACE(also_output ? "quantized image also an output" : "quantized image read by the convolution only");
    Built m;
    m.b.input("x", {1, 3, size, size});
    const std::string q = m.quantize("x", 1.f / 255.f, 0);
    const std::string y = m.conv_silu(q, 1.f / 255.f, 0, 3, 16, 3, 0.04f, 40);
    m.b.output(y);
    if (also_output) m.b.output(q, onnx::TensorProto::UINT8);
    const std::string bytes = m.b.bytes();
    auto model = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".");
    ASSERT_TRUE(model) << model.error().message;
    HostTensor x(DType::kFloat32, Shape{1, 3, size, size});
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
    const TensorRef ref = x.ref();
    std::vector<HostTensor> out[2];
    for (const bool channels_last : {false, true}) {
      SessionOptions so;
      so.threads = 2;
      so.channels_last = channels_last;
      auto s = NativeSession::create(*model, so);
      ASSERT_TRUE(s) << s.error().message;
      ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&ref, 1), out[channels_last]));
      if (!channels_last) continue;
      auto summary = (*s)->plan_summary({x.shape()});
      ASSERT_TRUE(summary) << summary.error().message;
      int conversions = 0, int8_conv_at = -1, conversion_before_conv = 0;
      std::string quantize_impl = "?";
      for (size_t i = 0; i < summary->steps.size(); ++i) {
        const auto& st = summary->steps[i];
        if (st.label == "layout conversion") ++conversions, conversion_before_conv += int8_conv_at < 0;
        if (st.label.rfind("Int8Conv", 0) == 0) int8_conv_at = static_cast<int>(i);
        if (st.label.rfind("QuantizeLinear", 0) == 0) quantize_impl = st.implementation;
      }
      ASSERT_GE(int8_conv_at, 0);
      EXPECT_EQ(quantize_impl, also_output ? "" : "streamdet:quantize_to_nhwc");
      EXPECT_EQ(conversion_before_conv, also_output ? 1 : 0);
      EXPECT_EQ(conversions, also_output ? 2 : 1);  // the output's back to plain
    }
    ASSERT_EQ(out[0].size(), out[1].size());
    for (size_t k = 0; k < out[0].size(); ++k) {
      ASSERT_EQ(out[0][k].shape(), out[1][k].shape());
      ASSERT_EQ(out[0][k].dtype(), out[1][k].dtype());
      EXPECT_EQ(std::memcmp(out[0][k].data(), out[1][k].data(), out[0][k].bytes()), 0) << "output " << k;
    }
  }
}

}  // namespace
}  // namespace sd::native
