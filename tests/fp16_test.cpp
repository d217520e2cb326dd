// fp16 storage on a device backend (--precision fp16), tested on the host: the half conversions
// against known values and the compiler's own _Float16, the precision flag's rules, and the
// planner's per-tensor decision through the test device backend asked to prefer fp16 (its kernels
// emulate fp16 by rounding): which tensors are fp16, where the converting copies are, that inputs
// and outputs stay float32, and that results stay within fp16's tolerance of the CPU's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "conformance/op_cases.h"
#include "conformance/synthetic_scene.h"
#include "engine/native/backend.h"
#ifdef STREAMDET_HAVE_CUDA
#include "engine/native/cuda/cuda_ops.h"
#endif
#include "engine/native/half.h"
#include "engine/native/precision.h"
#include "engine/native/session.h"
#include "fake_device_backend.h"
#include "onnx_builder.h"
#include "postprocess/detection_parity.h"

namespace sd::native {
namespace {

using test::FakeDeviceBackend;
using test::OnnxBuilder;

float from_bits(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

TEST(Half, KnownValues) {
  EXPECT_EQ(float_to_half(0.f), 0x0000);
  EXPECT_EQ(float_to_half(-0.f), 0x8000);
  EXPECT_EQ(float_to_half(1.f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.f), 0xc000);
  EXPECT_EQ(float_to_half(0.5f), 0x3800);
  EXPECT_EQ(float_to_half(1.f / 3.f), 0x3555);
  EXPECT_EQ(float_to_half(65504.f), 0x7bff);  // the largest finite
  EXPECT_EQ(float_to_half(65519.f), 0x7bff);  // rounds down
  EXPECT_EQ(float_to_half(65520.f), 0x7c00);  // halfway to the next: infinity
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(float_to_half(std::ldexp(1.f, -14)), 0x0400);  // the smallest normal
  EXPECT_EQ(float_to_half(std::ldexp(1.f, -24)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.f, -25)), 0x0000);  // a tie: to even (zero)
  EXPECT_EQ(float_to_half(std::ldexp(3.f, -25)), 0x0002);  // 1.5 ulp: a tie, to even (2)
  EXPECT_EQ(float_to_half(std::ldexp(1.f, -26)), 0x0000);
  // Ties between normals go to the even mantissa.
  EXPECT_EQ(float_to_half(1.f + std::ldexp(1.f, -11)), 0x3c00);
  EXPECT_EQ(float_to_half(1.f + 3 * std::ldexp(1.f, -11)), 0x3c02);
  EXPECT_EQ(float_to_half(1.f + std::ldexp(1.f, -11) + std::ldexp(1.f, -20)), 0x3c01);
  const uint16_t nan = float_to_half(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x3ff, 0);
  EXPECT_TRUE(std::isnan(half_to_float(nan)));
  EXPECT_EQ(half_to_float(0x3c00), 1.f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.f, -24));
  EXPECT_EQ(half_to_float(0x03ff), std::ldexp(1023.f, -24));
  EXPECT_EQ(half_to_float(0x7bff), 65504.f);
  EXPECT_EQ(half_to_float(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
}

TEST(Half, EveryHalfSurvivesTheRoundTrip) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half(f), h) << std::hex << h;
  }
}

TEST(Half, RoundingErrorIsWithinHalfAnUlp) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-60000.f, 60000.f);
  for (int i = 0; i < 100000; ++i) {
    const float f = u(rng) * (i % 2 ? 1.f : 1e-3f);
    if (std::fabs(f) < 6.2e-5f) continue;
    ASSERT_LE(std::fabs(round_to_half(f) - f), kHalfRoundingError * std::fabs(f) * (1 + 1e-6)) << f;
  }
}

#if defined(__FLT16_MAX__)
// GCC's _Float16 (x86-64 since GCC 12) converts as IEEE 754 says: every float32 exponent and a
// spread of mantissas, ties and subnormals included, must give the same bits.
TEST(Half, MatchesTheCompilersFloat16) {
  for (uint64_t x = 0; x <= 0xffffffffull; x += 4093) {
    for (uint32_t low : {0u, 0xfffu, 0x1000u, 0x1001u, 0x3000u}) {
      const uint32_t bits = (static_cast<uint32_t>(x) & ~0x1fffu) | low;
      const float f = from_bits(bits);
      if (std::isnan(f)) continue;
      const _Float16 h = static_cast<_Float16>(f);
      uint16_t expect;
      std::memcpy(&expect, &h, 2);
      ASSERT_EQ(float_to_half(f), expect) << std::hex << bits;
      ASSERT_EQ(half_to_float(expect), static_cast<float>(h)) << std::hex << expect;
    }
  }
}
#endif

TEST(Fp16Precision, AutoIsFp16OnAGpuAndFp32OnTheCpu) {
  for (const bool bf16 : {false, true}) {
    EXPECT_EQ(resolve_precision("auto", bf16, /*on_cuda=*/true).value_or(Precision::kBf16), Precision::kFp16);
    EXPECT_EQ(resolve_precision("auto", bf16, false).value_or(Precision::kBf16), Precision::kFp32);
    EXPECT_EQ(resolve_precision("fp16", bf16, true).value_or(Precision::kBf16), Precision::kFp16);
    EXPECT_EQ(resolve_precision("fp32", bf16, true).value_or(Precision::kBf16), Precision::kFp32);
  }
}

TEST(Fp16Precision, RefusedWithOneUsageLineOnTheCpu) {
  auto refused = resolve_precision("fp16", true, /*on_cuda=*/false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kUsage);
  EXPECT_EQ(refused.error().message.find('\n'), std::string::npos);
  EXPECT_EQ(refused.error().message.rfind("--precision fp16: ", 0), 0u) << refused.error().message;
  auto bad = resolve_precision("fp8", true, true);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "--precision fp8: expected auto, fp32, fp16 or bf16");
}

HostTensor random_tensor(const Shape& shape, uint32_t seed) {
  HostTensor t(DType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = u(rng);
  return t;
}

std::shared_ptr<const NativeModel> load(const std::string& bytes, bool optimize) {
  LoadOptions lo;
  lo.optimize = optimize;
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", lo);
  EXPECT_TRUE(m) << (m ? "" : m.error().message);
  return m ? *m : nullptr;
}

struct Outcome {
  std::vector<HostTensor> outputs;
  PlanSummary summary;
};

Outcome run_on(const std::shared_ptr<const NativeModel>& model, std::shared_ptr<const Backend> device, const HostTensor& x,
               bool device_fp16, bool channels_last = true) {
  SessionOptions so;
  so.threads = 2;
  so.channels_last = channels_last;
  if (device) so.backends = {device};
  so.device_fp16 = device_fp16;
  auto s = NativeSession::create(model, so);
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  Outcome o;
  if (!s) return o;
  auto summary = (*s)->plan_summary({x.shape()});
  EXPECT_TRUE(summary) << (summary ? "" : summary.error().message);
  if (summary) o.summary = *summary;
  TensorRef ref = x.ref();
  auto st = (*s)->run(std::span<const TensorRef>(&ref, 1), o.outputs);
  EXPECT_TRUE(st) << (st ? "" : st.error().message);
  return o;
}

// Within the conformance cases' fp16 tolerance of the float32 reference; returns max |diff|.
double expect_fp16_close(const std::vector<HostTensor>& got, const std::vector<HostTensor>& ref) {
  double worst = 0;
  EXPECT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < got.size() && i < ref.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), DType::kFloat32) << "output " << i << " is handed over as float32";
    EXPECT_EQ(got[i].shape(), ref[i].shape());
    if (got[i].shape() != ref[i].shape()) continue;
    for (int64_t k = 0; k < got[i].numel(); ++k) {
      const double a = got[i].as<float>()[k], b = ref[i].as<float>()[k], d = std::fabs(a - b);
      EXPECT_LE(d, conformance::kFp16Atol + conformance::kFp16Rtol * std::fabs(b)) << "output " << i << " at " << k;
      worst = std::max(worst, d);
    }
  }
  return worst;
}

std::string backend_precision(const PlanSummary& s, const std::string& name) {
  for (const auto& b : s.backends)
    if (b.name == name) return b.precision;
  return "";
}

int steps_on(const PlanSummary& s, const std::string& backend) {
  for (const auto& b : s.backends)
    if (b.name == backend) return b.steps;
  return -1;
}

// x -> Conv(+bias, pads) -> Relu -> Add(const) -> Sigmoid -> y; and a Concat and a Split to check
// that the offsets of views and slabs are counted in fp16 elements.
std::string model_bytes() {
  OnnxBuilder b;
  b.input("x", {1, 4, 10, 10});
  b.random_initializer("w", {8, 4, 3, 3}, -0.5f, 0.5f);
  b.random_initializer("bias", {8}, -0.1f, 0.1f);
  b.random_initializer("k", {1, 8, 1, 1}, -1.f, 1.f);
  b.initializer_i64("parts", {2}, {3, 5});
  auto* c = b.node("Conv", {"x", "w", "bias"}, {"c"});
  OnnxBuilder::attr_ints(c, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"});
  b.node("Add", {"r", "k"}, {"a"});
  b.node("Sigmoid", {"a"}, {"s"});
  auto* sp = b.node("Split", {"s", "parts"}, {"p", "q"});
  OnnxBuilder::attr_int(sp, "axis", 1);
  b.node("Neg", {"q"}, {"n"});
  auto* cat = b.node("Concat", {"n", "p", "c"}, {"y"});
  OnnxBuilder::attr_int(cat, "axis", 1);
  b.output("y");
  b.output("p");
  return b.bytes();
}

TEST(Fp16Plan, FloatTensorsOnTheDeviceAreFp16AndTheCopiesConvert) {
  for (const bool channels_last : {false, true}) {
    SCOPED_TRACE(channels_last ? "channels-last" : "plain");
    auto model = load(model_bytes(), true);
    ASSERT_TRUE(model);
    const HostTensor x = random_tensor(Shape{1, 4, 10, 10}, 1);
    const Outcome cpu = run_on(model, nullptr, x, false, channels_last);
    auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{}, Layout::kNhwc, DType::kFloat16);
    const Outcome half = run_on(model, device, x, true, channels_last);
    EXPECT_EQ(backend_precision(half.summary, "test"), "float16");
    EXPECT_EQ(backend_precision(half.summary, "cpu"), "float32");
    EXPECT_EQ(steps_on(half.summary, "cpu"), 0);
    // The input in, converted to fp16; the two outputs out, converted back.
    std::vector<std::string> copies;
    for (const auto& st : half.summary.steps) {
      if (st.copy) copies.push_back(st.implementation);
      else EXPECT_EQ(st.implementation.rfind("test:fp16:", 0), 0u) << st.label << ": " << st.implementation;
    }
    EXPECT_EQ(copies, (std::vector<std::string>{"host -> test:0 (float32 -> float16)", "test:0 -> host (float16 -> float32)",
                                                "test:0 -> host (float16 -> float32)"}));
    const double worst = expect_fp16_close(half.outputs, cpu.outputs);
    EXPECT_GT(worst, 0) << "fp16 storage rounds: the results cannot all be the CPU's bits";
  }
}

TEST(Fp16Plan, WithoutFp16TheSameDeviceStoresFloat32AndMatchesTheCpuExactly) {
  auto model = load(model_bytes(), true);
  ASSERT_TRUE(model);
  const HostTensor x = random_tensor(Shape{1, 4, 10, 10}, 2);
  const Outcome cpu = run_on(model, nullptr, x, false);
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{}, Layout::kNhwc, DType::kFloat16);
  const Outcome f32 = run_on(model, device, x, false);
  EXPECT_EQ(backend_precision(f32.summary, "test"), "float32");
  // And a backend that prefers float32 ignores device_fp16.
  const Outcome plain = run_on(model, std::make_shared<FakeDeviceBackend>(), x, true);
  EXPECT_EQ(backend_precision(plain.summary, "test"), "float32");
  for (const Outcome* o : {&f32, &plain}) {
    ASSERT_EQ(o->outputs.size(), cpu.outputs.size());
    for (const auto& st : o->summary.steps) EXPECT_EQ(st.implementation.find("float16"), std::string::npos) << st.implementation;
    for (size_t i = 0; i < cpu.outputs.size(); ++i)
      for (int64_t k = 0; k < cpu.outputs[i].numel(); ++k) ASSERT_EQ(o->outputs[i].as<float>()[k], cpu.outputs[i].as<float>()[k]);
  }
}

TEST(Fp16Plan, EveryCrossingBetweenTheCpuAndAnFp16DeviceConverts) {
  auto model = load(model_bytes(), false);
  ASSERT_TRUE(model);
  const HostTensor x = random_tensor(Shape{1, 4, 10, 10}, 3);
  const Outcome cpu = run_on(model, nullptr, x, false, false);
  // Conv and Add on the device, Relu, Sigmoid, Split, Neg and Concat on the CPU.
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{"Conv", "Add"}, Layout::kNhwc, DType::kFloat16);
  const Outcome mixed = run_on(model, device, x, true, false);
  EXPECT_EQ(steps_on(mixed.summary, "test"), 2);
  int up = 0, down = 0;
  for (const auto& st : mixed.summary.steps) {
    if (!st.copy) continue;
    up += st.implementation.find("(float32 -> float16)") != std::string::npos;
    down += st.implementation.find("(float16 -> float32)") != std::string::npos;
  }
  // x and r go to the device; c (read by Relu and Concat) and a come back, each once.
  EXPECT_EQ(up, 2);
  EXPECT_EQ(down, 2);
  EXPECT_EQ(mixed.summary.copies, 4);
  expect_fp16_close(mixed.outputs, cpu.outputs);
}

TEST(Fp16Plan, Fp16TensorsTakeHalfTheDevicesArena) {
  auto model = load(model_bytes(), true);
  ASSERT_TRUE(model);
  const HostTensor x = random_tensor(Shape{1, 4, 10, 10}, 4);
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{}, Layout::kNhwc, DType::kFloat16);
  const Outcome f32 = run_on(model, device, x, false), f16 = run_on(model, device, x, true);
  size_t a32 = 0, a16 = 0;
  for (const auto& b : f32.summary.backends) a32 += b.name == "test" ? b.arena_bytes : 0;
  for (const auto& b : f16.summary.backends) a16 += b.name == "test" ? b.arena_bytes : 0;
  EXPECT_GT(a32, 0u);
  // Each tensor is rounded up to 64 bytes: at most that much more than half.
  EXPECT_LE(a16, a32 / 2 + 64 * 8);
  EXPECT_LT(a16, a32);
}

TEST(Fp16Plan, NonFloatTensorsKeepTheirType) {
  // An int64 tensor computed on the device side of the graph stays int64 (ArgMax on the CPU, Cast
  // and Add on the device where it claims them).
  OnnxBuilder b;
  b.input("x", {2, 6});
  b.node("Relu", {"x"}, {"r"});
  auto* am = b.node("ArgMax", {"r"}, {"i"});
  OnnxBuilder::attr_int(am, "axis", 1);
  auto* cast = b.node("Cast", {"i"}, {"f"});
  OnnxBuilder::attr_int(cast, "to", 1);
  b.node("Add", {"f", "r"}, {"y"});
  b.output("y");
  b.output("i", 7);
  auto model = load(b.bytes(), false);
  ASSERT_TRUE(model);
  const HostTensor x = random_tensor(Shape{2, 6}, 5);
  const Outcome cpu = run_on(model, nullptr, x, false, false);
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{"Relu", "Add", "ArgMax"}, Layout::kNhwc, DType::kFloat16);
  const Outcome half = run_on(model, device, x, true, false);
  ASSERT_EQ(half.outputs.size(), 2u);
  EXPECT_EQ(half.outputs[1].dtype(), DType::kInt64);
  // ArgMax of the fp16-rounded values: the same index unless two values round together; the
  // seeded input has no such pair.
  for (int64_t k = 0; k < 2; ++k) EXPECT_EQ(half.outputs[1].as<int64_t>()[k], cpu.outputs[1].as<int64_t>()[k]);
  for (int64_t k = 0; k < half.outputs[0].numel(); ++k)
    EXPECT_NEAR(half.outputs[0].as<float>()[k], cpu.outputs[0].as<float>()[k], 2e-3);
}

// The bundled model (a trained YOLOv8-style detector) with every node on the test device in
// emulated fp16: its raw outputs within the documented whole-model tolerance of the CPU's float32
// (max |diff| / max |ref|, conformance::kFp16ModelTolerance), what the GPU check asks of the GPU.
TEST(Fp16Plan, TheBundledModelInEmulatedFp16StaysWithinTheModelTolerance) {
  auto m = NativeModel::load(std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8.onnx");
  ASSERT_TRUE(m) << m.error().message;
  HostTensor x(DType::kFloat32, Shape{1, 3, 256, 256});
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  const Outcome cpu = run_on(*m, nullptr, x, false);
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{}, Layout::kNhwc, DType::kFloat16);
  const Outcome half = run_on(*m, device, x, true);
  EXPECT_EQ(steps_on(half.summary, "cpu"), 0);
  EXPECT_EQ(half.summary.copies, 2);
  ASSERT_EQ(half.outputs.size(), cpu.outputs.size());
  double max_diff = 0, max_ref = 0;
  for (size_t o = 0; o < cpu.outputs.size(); ++o)
    for (int64_t i = 0; i < cpu.outputs[o].numel(); ++i) {
      max_diff = std::max(max_diff, std::fabs(double(half.outputs[o].as<float>()[i]) - cpu.outputs[o].as<float>()[i]));
      max_ref = std::max(max_ref, std::fabs(double(cpu.outputs[o].as<float>()[i])));
    }
  RecordProperty("max_diff_over_max_ref", std::to_string(max_diff / max_ref));
  EXPECT_GT(max_diff, 0);
  EXPECT_LE(max_diff, conformance::kFp16ModelTolerance * max_ref) << max_diff << " of " << max_ref;
}

// The target on the host: the bundled detector on the check's synthetic scene, every node
// in emulated fp16 on the test device, finds the same objects as the CPU's float32 (same classes,
// corners within 1 px; the GPU check's comparison).
TEST(Fp16Plan, TheBundledDetectorFindsTheSameObjectsInEmulatedFp16) {
  auto m = NativeModel::load(std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8.onnx");
  ASSERT_TRUE(m) << m.error().message;
  HostTensor x(DType::kFloat32, Shape{1, 3, 256, 256});
  conformance::fill_scene(x);
  const Outcome cpu = run_on(*m, nullptr, x, false);
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{}, Layout::kNhwc, DType::kFloat16);
  const Outcome half = run_on(*m, device, x, true);
  ASSERT_EQ(cpu.outputs.size(), 1u);
  ASSERT_EQ(half.outputs.size(), 1u);
  const Shape& s = cpu.outputs[0].shape();
  ASSERT_EQ(s.rank, 3);
  const Detections a = decode_yolov8_plain(cpu.outputs[0].as<float>(), s[1], s[2], 0.25f, 0.45f);
  const Detections b = decode_yolov8_plain(half.outputs[0].as<float>(), s[1], s[2], 0.25f, 0.45f);
  EXPECT_GE(a.size(), 4u) << "the scene's four shapes";
  const DetectionParity p = compare_detections(a, b, 0.25f, 0.02f, 1.f);
  EXPECT_TRUE(p.same()) << p.missing << " missing, " << p.extra << " extra of " << p.reference;
  EXPECT_EQ(p.matched, p.reference);
  RecordProperty("max_corner_px", std::to_string(p.max_corner_px));
}

#ifdef STREAMDET_HAVE_CUDA
// The CUDA backend's op table asked on the host (its supports() and kernel factories need no GPU:
// a convolution's cuDNN plan fails without one and the direct kernel is made): planned as the GPU
// would be, every op the GPU claims in float32 it claims in fp16 too, on every random case where
// it claims the float32 one, and the kernel it makes for an fp16 node is its fp16 instantiation
// ("/fp16" in its implementation). The kernels that run are the test device's CPU emulation.
TEST(Fp16Plan, TheCudaBackendClaimsInFp16EveryCaseItClaimsInFloat32) {
  std::vector<std::string> wrong;
  int made = 0;
  auto claims = [&wrong, &made](const OpContext& ctx) {
    const auto& table = cuda::cuda_ops();
    auto it = table.find(ctx.node.op_type);
    if (it == table.end() || !it->second.supports(ctx)) return false;
    bool half = false;
    for (const auto& t : ctx.inputs) half = half || t.dtype == DType::kFloat16;
    if (half) {
      auto k = it->second.create(ctx);
      ++made;
      if (!k) wrong.push_back(ctx.describe() + ": " + k.error().message);
      else if ((*k)->implementation().find("fp16") == std::string::npos) wrong.push_back(ctx.describe() + ": " + (*k)->implementation());
    }
    return true;
  };
  for (const auto& [op, gen] : conformance::generators()) {
    if (!cuda::cuda_ops().count(op)) continue;
    SCOPED_TRACE(op);
    auto f32 = std::make_shared<FakeDeviceBackend>(std::set<std::string>{}, Layout::kNhwc, DType::kFloat16);
    auto f16 = std::make_shared<FakeDeviceBackend>(std::set<std::string>{}, Layout::kNhwc, DType::kFloat16);
    f32->claim_with(claims);
    f16->claim_with(claims);
    const auto a = conformance::check_op("cuda_table", op, f32, 16, conformance::kFp32Atol, conformance::kFp32Rtol, false);
    const auto b = conformance::check_op("cuda_table", op, f16, 16, conformance::kFp16Atol, conformance::kFp16Rtol, true);
    EXPECT_TRUE(a.failure.empty()) << a.failure;
    EXPECT_TRUE(b.failure.empty()) << b.failure;
    EXPECT_GT(a.ran_on_backend, 0);
    EXPECT_EQ(b.ran_on_backend, a.ran_on_backend) << "cases the GPU claims in float32 but not in fp16";
    EXPECT_EQ(b.device_float, "float16");
  }
  EXPECT_GT(made, 100);
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " fp16 nodes, the first: " << (wrong.empty() ? "" : wrong.front());
  RecordProperty("fp16_kernels_made", std::to_string(made));
}
#endif

}  // namespace
}  // namespace sd::native
