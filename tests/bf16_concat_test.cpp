// --precision bf16: tensors read only by bf16 convolutions kept bf16 (keep_bf16_tensors,
// precision.h: Concats written as bf16, cpu/concat_bf16.cpp, and convolutions' results). The float32 -> bf16 conversion against a naive
// round-to-nearest-even reference (special values included) and against oneDNN's own reorder,
// whose rounding the bf16 convolutions saw before; and a model's outputs to the byte against the
// same model with every tensor float32. The tests that need avx512_bf16 skip, saying so, elsewhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "core/cpu_isa.h"
#include "engine/native/cpu/bf16_convert.h"
#include "engine/native/conv_choice.h"
#include "engine/native/cpu/bf16_support.h"
#include "engine/native/precision.h"
#include "engine/native/session.h"
#include "onnx_builder.h"

namespace sd::native {
namespace {

using test::OnnxBuilder;

// The value of a bf16 bit pattern in double; the pattern above the largest finite one (the
// exponent all ones, mantissa 0) counts as 2^128, the next step, so that rounding up to infinity
// is decided by distance like any other rounding.
double bf16_value(uint16_t p) {
  const int sign = p >> 15, e = (p >> 7) & 0xff, m = p & 0x7f;
  const double mag = e == 0 ? std::ldexp(m / 128.0, -126) : std::ldexp(1.0 + m / 128.0, e - 127);
  return sign ? -mag : mag;
}

// Naive: the nearer of the two bf16 neighbours of x (truncated and one up), ties to the even
// one; denormal inputs are zero (vcvtneps2bf16 treats them so), NaN keeps its top bits and gets
// the quiet bit, infinities stay.
uint16_t naive_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x40);
  if (std::isinf(x)) return static_cast<uint16_t>(u >> 16);
  if (std::fpclassify(x) == FP_SUBNORMAL || x == 0) return static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint16_t lo = static_cast<uint16_t>(u >> 16), hi = static_cast<uint16_t>(lo + 1);
  const double dlo = std::fabs(static_cast<double>(x) - bf16_value(lo)), dhi = std::fabs(bf16_value(hi) - static_cast<double>(x));
  if (dlo < dhi) return lo;
  if (dhi < dlo) return hi;
  return (lo & 1) ? hi : lo;
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Special values and ties first, then random bit patterns (every exponent, NaNs and denormals
// among them) and random ordinary floats.
std::vector<float> awkward_floats(size_t count) {
  std::vector<float> v = {0.f, -0.f, 1.f, -1.f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                          from_bits(0x7f800001u), from_bits(0xff800001u), from_bits(0x7fbfffffu), from_bits(0x7f812345u),  // signalling NaNs
                          std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                          from_bits(0x007fffffu), from_bits(0x807fffffu), std::numeric_limits<float>::min(), -std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),  // round up to infinity
                          from_bits(0x7f7f7fffu), from_bits(0x7f7f8000u), from_bits(0x7f7f8001u),  // below, at, above the overflow tie
                          from_bits(0x3f808000u), from_bits(0x3f818000u),  // ties: to the even below, to the even above
                          from_bits(0x3f807fffu), from_bits(0x3f808001u), from_bits(0x00808000u), from_bits(0x80818000u)};
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> u(-100.f, 100.f);
  while (v.size() < count) {
    v.push_back(from_bits(static_cast<uint32_t>(rng())));
    v.push_back(u(rng));
  }
  v.resize(count);
  return v;
}

TEST(Bf16Convert, OneValueMatchesTheNaiveRoundingToNearestEven) {
  for (float x : awkward_floats(200000)) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    ASSERT_EQ(ops::float_to_bf16_rne(x), naive_bf16(x)) << std::hex << "float bits 0x" << bits;
  }
}

// Rows of awkward widths (every tail of the 32- and 16-wide steps) at strides, as a Concat copies
// its inputs: each variant writes the reference's bits and leaves the gaps between rows alone.
void expect_rows_match_reference(void (*rows_fn)(const float*, size_t, uint16_t*, size_t, size_t, size_t)) {
  const std::vector<float> values = awkward_floats(64 * 200);
  for (size_t cols : {1, 7, 15, 16, 17, 31, 32, 33, 48, 63, 64, 80, 95}) {
    const size_t rows = 9, src_stride = cols + 5, dst_stride = cols + 11;
    std::vector<uint16_t> got(rows * dst_stride, 0xabcd);
    rows_fn(values.data(), src_stride, got.data(), dst_stride, rows, cols);
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < dst_stride; ++c) {
        const uint16_t want = c < cols ? naive_bf16(values[r * src_stride + c]) : 0xabcd;
        ASSERT_EQ(got[r * dst_stride + c], want) << "cols " << cols << " row " << r << " col " << c;
      }
  }
}

TEST(Bf16Convert, PortableRowsMatchTheReference) { expect_rows_match_reference(ops::floats_to_bf16_rows_portable); }

TEST(Bf16Convert, Avx512RowsMatchTheReference) {
#if defined(__x86_64__)
  if (cpu::active_isa() < cpu::Isa::kAvx512) GTEST_SKIP() << "this CPU has no AVX-512";
  expect_rows_match_reference(ops::floats_to_bf16_rows_avx512);
#else
  GTEST_SKIP() << "not an x86-64 processor";
#endif
}

TEST(Bf16Convert, Avx512Bf16RowsMatchTheReference) {
#if defined(__x86_64__)
  if (cpu::active_isa() < cpu::Isa::kAvx512Bf16) GTEST_SKIP() << "this CPU has no avx512_bf16 (vcvtne2ps2bf16)";
  expect_rows_match_reference(ops::floats_to_bf16_rows_avx512bf16);
#else
  GTEST_SKIP() << "not an x86-64 processor";
#endif
}

// The conversion the bf16 convolutions' sources went through before (a oneDNN reorder from
// float32 to bf16), on the same values: the same bits, so keeping a tensor bf16 changes no result.
TEST(Bf16Convert, MatchesOneDnnsReorderIntoBf16) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 instructions (avx512_bf16 or AMX): oneDNN emulates bf16 here";
  const std::vector<float> values = awkward_floats(16 * 1000);
  using dnnl::memory;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  const memory::dims dims{1, 16, 1, 1000};
  memory src({dims, memory::data_type::f32, memory::format_tag::nhwc}, eng, const_cast<float*>(values.data()));
  std::vector<uint16_t> want(values.size()), got(values.size());
  memory dst({dims, memory::data_type::bf16, memory::format_tag::nhwc}, eng, want.data());
  dnnl::reorder(src, dst).execute(stream, src, dst);
  stream.wait();
  ops::floats_to_bf16_rows(values.data(), values.size(), got.data(), values.size(), 1, values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof bits);
    ASSERT_EQ(got[i], want[i]) << std::hex << "float bits 0x" << bits;
  }
}

struct Loaded {
  std::shared_ptr<const NativeModel> model;
  std::unique_ptr<NativeSession> session;
};

Loaded load(const std::string& bytes, bool bf16_tensors, bool channels_last, Conv3x3Choice conv3x3 = Conv3x3Choice::kMeasured) {
  LoadOptions lo;
  lo.conv3x3 = conv3x3;
  lo.precision = Precision::kBf16;
  lo.conv_candidate = 0;  // oneDNN's bf16 kernel on every node it runs: the same kernels on both sides
  lo.bf16_tensors = bf16_tensors;
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", lo);
  EXPECT_TRUE(m) << (m ? "" : m.error().message);
  if (!m) return {};
  SessionOptions so;
  so.threads = 2;
  so.channels_last = channels_last;
  auto s = NativeSession::create(*m, so);
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  if (!s) return {};
  return {*m, std::move(*s)};
}

int steps_named(Loaded& l, const Shape& input, const std::string& marker) {
  auto summary = l.session->plan_summary({input});
  EXPECT_TRUE(summary) << (summary ? "" : summary.error().message);
  if (!summary) return 0;
  int n = 0;
  for (const auto& s : summary->steps) n += (s.label + " | " + s.implementation).find(marker) != std::string::npos;
  return n;
}

void conv(OnnxBuilder& b, const std::string& in, const std::string& out, int64_t c, int64_t oc, int64_t k, int64_t stride) {
  b.random_initializer(out + "_w", {oc, c, k, k}, -0.3f, 0.3f);
  b.random_initializer(out + "_b", {oc}, -0.3f, 0.3f);
  auto* n = b.node("Conv", {in, out + "_w", out + "_b"}, {out});
  OnnxBuilder::attr_ints(n, "strides", {stride, stride});
  OnnxBuilder::attr_ints(n, "pads", {k / 2, k / 2, k / 2, k / 2});
}

void silu(OnnxBuilder& b, const std::string& in, const std::string& out) {
  b.node("Sigmoid", {in}, {out + "_s"});
  b.node("Mul", {in, out + "_s"}, {out});
}

// An image into the stem kernel and a 1x1 (both results kept bf16), a C2f-like block (channels
// not multiples of 16: the conversion's tails), a neck-like Concat read by a strided 3x3, a 3x3
// stride-1 layer (our Winograd or oneDNN's, as timed) and a residual sum each read by a 1x1
// (results kept bf16), and a Concat also read by an Add (it stays float32).
void build_model(OnnxBuilder& b) {
  constexpr int64_t c = 24;
  b.input("img", {1, 3, 36, 44});
  conv(b, "img", "s0", 3, 16, 3, 2);
  silu(b, "s0", "s");
  conv(b, "s", "x0", 16, c, 1, 1);
  silu(b, "x0", "x");
  conv(b, "x", "a0", c, c, 1, 1);
  silu(b, "a0", "a");
  conv(b, "a", "m0", c, 8, 3, 1);
  silu(b, "m0", "m");
  auto* cat = b.node("Concat", {"a", "m", "x"}, {"cat"});  // 56 channels, read by cv2 only
  OnnxBuilder::attr_int(cat, "axis", 1);
  conv(b, "cat", "y0", 56, 32, 1, 1);
  silu(b, "y0", "y");
  auto* neck = b.node("Concat", {"y", "x"}, {"neck"});  // 56 channels, read by a strided 3x3 only
  OnnxBuilder::attr_int(neck, "axis", 1);
  conv(b, "neck", "z0", 56, 16, 3, 2);
  silu(b, "z0", "z");
  conv(b, "y", "w", 32, 32, 3, 1);  // read by a 1x1 only
  conv(b, "w", "wy", 32, 16, 1, 1);
  auto* both = b.node("Concat", {"a", "m"}, {"both"});  // 32 channels: a convolution and an Add read it
  OnnxBuilder::attr_int(both, "axis", 1);
  conv(b, "both", "u", 32, 32, 1, 1);
  b.node("Add", {"u", "both"}, {"v"});  // a residual sum, read by a 1x1 only
  conv(b, "v", "vv", 32, 16, 1, 1);
  b.output("y");
  b.output("z");
  b.output("wy");
  b.output("vv");
}

// An input of `shape`, uniform in [-2, 2).
HostTensor random_input(const Shape& shape, unsigned seed) {
  HostTensor x(DType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  return x;
}

TEST(Bf16Tensors, OutputsAreTheBytesOfTheFloat32TensorsPlan) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 instructions (avx512_bf16 or AMX): --precision bf16 is refused here";
  OnnxBuilder b;
  build_model(b);
  const Shape shape{1, 3, 36, 44};
  const HostTensor x = random_input(shape, 5);
  // Timed 3x3 kernels, then our Winograd forced (its AVX-512 epilogue writes bf16 itself).
  for (const auto [channels_last, conv3x3] : {std::pair{true, Conv3x3Choice::kMeasured}, std::pair{false, Conv3x3Choice::kMeasured},
                                              std::pair{true, Conv3x3Choice::kWinograd}}) {
    Loaded kept = load(b.bytes(), true, channels_last, conv3x3), reference = load(b.bytes(), false, channels_last, conv3x3);
    ASSERT_TRUE(kept.session && reference.session);
    if (conv3x3 == Conv3x3Choice::kWinograd && cpu::active_isa() >= cpu::Isa::kAvx512Bf16)
      EXPECT_EQ(steps_named(kept, shape, "wino_4x3:avx512_bf16 (bf16), bf16 result"), 1);
    if (channels_last) {
      // Two Concats written in bf16; six convolutions read bf16 (x0, a0, y0, z0, wy, vv); four
      // write it (the stem s0, x0, w, u with its sum). The third Concat (an Add reads it too)
      // and everything in the reference plan stay float32.
      EXPECT_EQ(steps_named(kept, shape, "Bf16Concat node"), 2);
      EXPECT_EQ(steps_named(kept, shape, "(bf16) on bf16"), 6);
      EXPECT_EQ(steps_named(kept, shape, "bf16 result"), 4);
      // The stem: bf16 products where the processor has vdpbf16ps (cpu/stem_conv_bf16.h).
      const bool bf16_stem = cpu::active_isa() >= cpu::Isa::kAvx512Bf16;
      EXPECT_EQ(steps_named(kept, shape, bf16_stem ? "stem_bf16:avx512_bf16, bf16 result" : "stem_direct, bf16 result"), 1);
    }
    EXPECT_EQ(steps_named(reference, shape, "Bf16Concat"), 0);
    EXPECT_EQ(steps_named(reference, shape, "bf16 result"), 0);
    EXPECT_EQ(steps_named(reference, shape, "on bf16"), 0);
    std::vector<HostTensor> got, want;
    const TensorRef in = x.ref();
    ASSERT_TRUE(kept.session->run({&in, 1}, got));
    ASSERT_TRUE(reference.session->run({&in, 1}, want));
    ASSERT_EQ(got.size(), 4u);
    ASSERT_EQ(want.size(), 4u);
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].shape(), want[k].shape());
      EXPECT_EQ(std::memcmp(got[k].data(), want[k].data(), static_cast<size_t>(got[k].numel()) * sizeof(float)), 0)
          << "output " << k << ", channels_last " << channels_last << ", 3x3 choice " << static_cast<int>(conv3x3);
    }
  }
}

// A C2f block with two bottlenecks, as YOLOv8's backbone has them: cv1 (1x1) split in two, each
// bottleneck two 3x3 stride-1 layers and a residual sum, the Concat of the parts and the
// bottlenecks' results read by cv2 (1x1); then a neck: cv2's result downsampled (3x3 stride 2),
// upsampled (nearest Resize) and concatenated with it and a float32 tensor (a graph output) for a
// last 1x1. Under --precision bf16
// every tensor in it is read by bf16 convolutions only (our Winograd reads the parts and the
// residuals as bf16; the Split and the Resize copy bf16), so all of it is kept bf16: cv1 writes
// bf16 straight into the Concat's rows, the Split is views of them, the second bottleneck writes
// into the rows too, the Resize into the neck's (a Bf16Concat, converting the float32 input), and
// no dense copy is left. Against the plan with every tensor float32 (whose convolutions round
// their inputs to bf16 as read): the same bytes.
void build_c2f(OnnxBuilder& b) {
  b.input("img", {1, 3, 40, 36});
  conv(b, "img", "s0", 3, 16, 3, 2);
  silu(b, "s0", "s");
  conv(b, "s", "a0", 16, 32, 1, 1);
  silu(b, "a0", "a");
  b.initializer_i64("split", {2}, {16, 16});
  OnnxBuilder::attr_int(b.node("Split", {"a", "split"}, {"p0", "p1"}), "axis", 1);
  std::string x = "p1";
  for (const std::string m : {"m0", "m1"}) {
    conv(b, x, m + "c1", 16, 16, 3, 1);
    silu(b, m + "c1", m + "h");
    conv(b, m + "h", m + "c2", 16, 16, 3, 1);
    silu(b, m + "c2", m + "y");
    b.node("Add", {x, m + "y"}, {m + "r"});  // fused into the convolution as its residual sum
    x = m + "r";
  }
  OnnxBuilder::attr_int(b.node("Concat", {"p0", "p1", "m0r", "m1r"}, {"cat"}), "axis", 1);
  conv(b, "cat", "y0", 64, 32, 1, 1);
  silu(b, "y0", "y");
  // A PAN-like neck: y downsampled, upsampled (nearest) and concatenated with y for a 1x1.
  conv(b, "y", "d", 32, 16, 3, 2);
  b.initializer("up_scales", {4}, {1.f, 1.f, 2.f, 2.f});
  b.node("Resize", {"d", "", "up_scales"}, {"up"});
  // A float32 branch (a graph output too) into the neck's Concat: it converts, the Resize writes
  // its bf16 rows in place.
  conv(b, "img", "e0", 3, 16, 3, 2);
  silu(b, "e0", "e");
  OnnxBuilder::attr_int(b.node("Concat", {"up", "y", "e"}, {"neck"}), "axis", 1);
  conv(b, "neck", "z", 64, 16, 1, 1);
  b.output("z");
  b.output("e");
}

void print_plan(Loaded& l, const Shape& input) {
  auto summary = l.session->plan_summary({input});
  if (!summary) return;
  for (const auto& s : summary->steps) std::printf("  %s | %s\n", s.label.c_str(), s.implementation.c_str());
}

TEST(Bf16Tensors, C2fBlockKeptBf16InPlaceIsTheFloat32TensorsPlansBytes) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 instructions (avx512_bf16 or AMX): --precision bf16 is refused here";
  OnnxBuilder b;
  build_c2f(b);
  const Shape shape{1, 3, 40, 36};
  const HostTensor x = random_input(shape, 8);
  for (const Conv3x3Choice conv3x3 : {Conv3x3Choice::kMeasured, Conv3x3Choice::kWinograd, Conv3x3Choice::kWinograd6x6}) {
    Loaded kept = load(b.bytes(), true, true, conv3x3), reference = load(b.bytes(), false, true, conv3x3);
    ASSERT_TRUE(kept.session && reference.session);
    const std::string what = "3x3 choice " + std::to_string(static_cast<int>(conv3x3));
    // The stem, cv1, the four 3x3 layers, cv2 and the downsampling write bf16; the 1x1 layers and
    // the downsampling read it as oneDNN's or our bf16 kernels (our Winograd reads it too).
    EXPECT_EQ(steps_named(kept, shape, "bf16 result"), 8) << what;
    EXPECT_EQ(steps_named(kept, shape, "(bf16) on bf16"), 4) << what;
    EXPECT_EQ(steps_named(kept, shape, "Bf16Concat"), 1) << what;
    EXPECT_EQ(steps_named(kept, shape, "dense copy"), 0) << what;
    EXPECT_EQ(steps_named(kept, shape, "Split"), 0) << what;
    // The C2f Concat copies the first bottleneck's result only (the second reads it too), the
    // neck's cv2's (the downsampling reads it too).
    EXPECT_EQ(steps_named(kept, shape, "Concat node"), 2) << what;
    EXPECT_EQ(steps_named(reference, shape, "bf16 result"), 0) << what;
    std::vector<HostTensor> got, want;
    const TensorRef in = x.ref();
    ASSERT_TRUE(kept.session->run({&in, 1}, got));
    ASSERT_TRUE(reference.session->run({&in, 1}, want));
    if (HasFailure()) print_plan(kept, shape);
    ASSERT_EQ(got.size(), 2u);
    ASSERT_EQ(want.size(), 2u);
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].shape(), want[k].shape());
      EXPECT_EQ(std::memcmp(got[k].data(), want[k].data(), static_cast<size_t>(got[k].numel()) * sizeof(float)), 0) << what << ", output " << k;
    }
  }
  // A plan that is not channels-last: the 3x3 layers are oneDNN's (it reads a bf16 source; the bf16
  // residual operands are widened to float32 for it). Against the same plan with float32 tensors:
  // close (not the same bytes: the residuals are rounded to bf16 here, not there).
  Loaded plain = load(b.bytes(), true, false), reference = load(b.bytes(), false, false);
  ASSERT_TRUE(plain.session && reference.session);
  std::vector<HostTensor> got, want;
  const TensorRef in = x.ref();
  ASSERT_TRUE(plain.session->run({&in, 1}, got));
  ASSERT_TRUE(reference.session->run({&in, 1}, want));
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].shape(), want[k].shape());
    float scale = 0, diff = 0;
    for (int64_t i = 0; i < got[k].numel(); ++i) {
      scale = std::max(scale, std::fabs(want[k].as<float>()[i]));
      diff = std::max(diff, std::fabs(got[k].as<float>()[i] - want[k].as<float>()[i]));
    }
    EXPECT_LE(diff, 0.02f * scale) << "output " << k << " of the plan that is not channels-last";
  }
}

// Which tensors keep_bf16_tensors keeps around the readers it lets through (a Split, a nearest
// Resize, a 3x3 stride-1 layer our Winograd takes), on the graph as loaded: each case a
// producer (a 1x1 convolution) and the reader in question; kept: the producer's result is bf16.
TEST(Bf16Tensors, SplitsResizesAndWinogradLayersPassBf16OnlyWhereEveryReaderTakesIt) {
  struct Case {
    const char* what;
    bool kept;
    std::function<void(OnnxBuilder&)> readers;  // of "a" (32 channels, 12x12)
    std::vector<const char*> outputs;
  };
  const Case cases[] = {
      {"a 3x3 stride-1 layer, 32 -> 16", true, [](OnnxBuilder& b) { conv(b, "a", "o", 32, 16, 3, 1); }, {"o"}},
      {"a 3x3 stride-1 layer, 32 -> 24 (not a multiple of 16)", false, [](OnnxBuilder& b) { conv(b, "a", "o", 32, 24, 3, 1); }, {"o"}},
      {"a Split into two 1x1 layers", true,
       [](OnnxBuilder& b) {
         b.initializer_i64("split", {2}, {16, 16});
         OnnxBuilder::attr_int(b.node("Split", {"a", "split"}, {"p0", "p1"}), "axis", 1);
         conv(b, "p0", "o0", 16, 16, 1, 1);
         conv(b, "p1", "o1", 16, 16, 1, 1);
       },
       {"o0", "o1"}},
      {"a Split with a part read by a Sigmoid", false,
       [](OnnxBuilder& b) {
         b.initializer_i64("split", {2}, {16, 16});
         OnnxBuilder::attr_int(b.node("Split", {"a", "split"}, {"p0", "p1"}), "axis", 1);
         conv(b, "p0", "o0", 16, 16, 1, 1);
         b.node("Sigmoid", {"p1"}, {"o1"});
       },
       {"o0", "o1"}},
      {"a nearest Resize into a 1x1 layer", true,
       [](OnnxBuilder& b) {
         b.initializer("up_scales", {4}, {1.f, 1.f, 2.f, 2.f});
         b.node("Resize", {"a", "", "up_scales"}, {"up"});
         conv(b, "up", "o", 32, 16, 1, 1);
       },
       {"o"}},
      {"a linear Resize into a 1x1 layer", false,
       [](OnnxBuilder& b) {
         b.initializer("up_scales", {4}, {1.f, 1.f, 2.f, 2.f});
         OnnxBuilder::attr_string(b.node("Resize", {"a", "", "up_scales"}, {"up"}), "mode", "linear");
         conv(b, "up", "o", 32, 16, 1, 1);
       },
       {"o"}},
      {"a Split whose part is a graph output", false,
       [](OnnxBuilder& b) {
         b.initializer_i64("split", {2}, {16, 16});
         OnnxBuilder::attr_int(b.node("Split", {"a", "split"}, {"p0", "o1"}), "axis", 1);
         conv(b, "p0", "o0", 16, 16, 1, 1);
       },
       {"o0", "o1"}},
  };
  for (const Case& k : cases) {
    OnnxBuilder b;
    b.input("img", {1, 16, 12, 12});
    conv(b, "img", "a", 16, 32, 1, 1);
    k.readers(b);
    for (const char* o : k.outputs) b.output(o);
    LoadOptions lo;
    lo.precision = Precision::kBf16;
    auto m = NativeModel::load_from_bytes(b.bytes().data(), b.bytes().size(), ".", lo);
    ASSERT_TRUE(m) << k.what << ": " << m.error().message;
    bool kept = false;
    for (const Node& n : (*m)->graph().nodes)
      if (!n.outputs.empty() && n.outputs[0] >= 0 && (*m)->graph().values[static_cast<size_t>(n.outputs[0])].name == "a")
        kept = n.attrs.get_int(kBf16Output, 0) != 0;
    EXPECT_EQ(kept, k.kept) << k.what;
  }
}

// Forced float32 convolutions (candidate 1) cannot read bf16: no Concat is kept bf16 then.
TEST(Bf16Tensors, NoneWhereTheConvolutionsAreForcedToFloat32) {
  OnnxBuilder b;
  build_model(b);
  LoadOptions lo;
  lo.precision = Precision::kBf16;
  lo.conv_candidate = 1;
  auto m = NativeModel::load_from_bytes(b.bytes().data(), b.bytes().size(), ".", lo);
  ASSERT_TRUE(m) << m.error().message;
  int kept = 0;
  for (const Node& n : (*m)->graph().nodes) kept += n.op_type == "Bf16Concat" || n.attrs.has(kBf16Output) || n.attrs.has(kBf16Source);
  EXPECT_EQ(kept, 0);
  lo.conv_candidate = 0;
  m = NativeModel::load_from_bytes(b.bytes().data(), b.bytes().size(), ".", lo);
  ASSERT_TRUE(m) << m.error().message;
  int concats = 0, results = 0;
  for (const Node& n : (*m)->graph().nodes) concats += n.op_type == "Bf16Concat", results += n.attrs.has(kBf16Output);
  EXPECT_EQ(concats, 2);
  EXPECT_EQ(results, 4);
}

}  // namespace
}  // namespace sd::native
