// --precision bf16: the refusal on CPUs without bf16 (decided from the ISA flags, so it is tested
// here on any machine), the bf16 convolutions against the float32 engine on a few shapes, and the
// bundled detector's outputs and detections in bf16 against float32. The tests that run bf16
// are skipped, saying so, where the CPU has no bf16 instructions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "cli_util.h"
#include "core/detection.h"
#include "core/error.h"
#include "core/cpu_isa.h"
#include "engine/native/conv_choice.h"
#include "engine/native/cpu/bf16_support.h"
#include "engine/native/precision.h"
#include "engine/native/session.h"
#include "onnx_builder.h"
#include "synthetic/scene.h"

namespace sd::native {
namespace {

using test::OnnxBuilder;

#define SKIP_WITHOUT_BF16() \
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 instructions (avx512_bf16 or AMX): --precision bf16 is refused here"

struct Loaded {
  std::shared_ptr<const NativeModel> model;
  std::unique_ptr<NativeSession> session;
};

// conv_candidate (conv_choice.h): 0 by default, oneDNN's bf16 convolution on every node our
// Winograd does not take, as the tests of the bf16 arithmetic want; kTimedCandidate lets the
// timing at load take the float32 one where it is faster.
Loaded load(const std::string& bytes_or_path, bool is_path, Precision precision, Conv3x3Choice conv3x3 = Conv3x3Choice::kMeasured,
            int conv_candidate = 0) {
  LoadOptions lo;
  lo.precision = precision;
  lo.conv3x3 = conv3x3;
  lo.conv_candidate = conv_candidate;
  auto m = is_path ? NativeModel::load(bytes_or_path, lo) : NativeModel::load_from_bytes(bytes_or_path.data(), bytes_or_path.size(), ".", lo);
  EXPECT_TRUE(m) << (m ? "" : m.error().message);
  if (!m) return {};
  SessionOptions so;
  so.threads = 2;
  auto s = NativeSession::create(*m, so);
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  if (!s) return {};
  return {*m, std::move(*s)};
}

std::vector<HostTensor> run(Loaded& l, const HostTensor& x) {
  std::vector<HostTensor> out;
  const TensorRef in = x.ref();
  auto st = l.session->run({&in, 1}, out);
  EXPECT_TRUE(st) << (st ? "" : st.error().message);
  return out;
}

// How many of the plan's steps have `marker` in their implementation's name: "(bf16)" for a bf16
// convolution (oneDNN's or our bf16 Winograd), "wino_4x3" for our Winograd (float32 or bf16).
int steps_named(Loaded& l, const Shape& input, const std::string& marker) {
  auto summary = l.session->plan_summary({input});
  EXPECT_TRUE(summary) << (summary ? "" : summary.error().message);
  if (!summary) return 0;
  return static_cast<int>(std::count_if(summary->steps.begin(), summary->steps.end(), [&](const PlanSummary::StepRow& s) {
    return s.implementation.find(marker) != std::string::npos;
  }));
}

int bf16_steps(Loaded& l, const Shape& input) { return steps_named(l, input, "(bf16)"); }

// The largest difference relative to the reference's largest magnitude: bf16 keeps 8 significant
// bits (a relative rounding of 2^-9 on each source value and weight), so sums of many products are
// off by about 1e-3 of the output's scale; 1e-2 is a bug. Our bf16 Winograd (3x3 stride-1 nodes)
// rounds the transformed tiles instead, whose products the output transform sums with weights up
// to 64: tests/winograd_conv_test.cpp derives its error, ~10x a direct bf16 convolution's; on a
// single such layer with random weights it measured 6.3e-2 to 6.7e-2 here (kBf16WinogradBound).
double worst_relative_error(const HostTensor& got, const HostTensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape()) return 1e9;
  double scale = 1e-6, worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, static_cast<double>(std::fabs(want.as<float>()[i])));
  for (int64_t i = 0; i < want.numel(); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(got.as<float>()[i] - want.as<float>()[i])));
  return worst / scale;
}

// A single bf16 Winograd layer against float32, as worst_relative_error measures: 2x what was
// measured (above); a wrong tap or channel pair gives errors of the order of the output itself.
constexpr double kBf16WinogradBound = 0.15;
// The same in F(6x6, 3x3) (larger transforms, winograd_conv_test.cpp): measured 0.087 to 0.092
// (F(4x4) 0.063 to 0.067 on the same layers), bounded at about twice that.
constexpr double kBf16Winograd6x6Bound = 0.2;

HostTensor random_tensor(const Shape& shape, uint32_t seed) {
  HostTensor t(DType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = u(rng);
  return t;
}

TEST(Bf16Precision, RefusedWithOneUsageLineOnACpuWithoutBf16) {
  auto refused = resolve_precision("bf16", /*cpu_has_bf16=*/false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kUsage);
  EXPECT_EQ(refused.error().message.find('\n'), std::string::npos);
  EXPECT_NE(refused.error().message.find("--precision bf16"), std::string::npos) << refused.error().message;
  auto taken = resolve_precision("bf16", true);
  ASSERT_TRUE(taken);
  EXPECT_EQ(*taken, Precision::kBf16);
  for (const bool has : {false, true}) {
    EXPECT_EQ(resolve_precision("auto", has).value_or(Precision::kBf16), Precision::kFp32);
    EXPECT_EQ(resolve_precision("fp32", has).value_or(Precision::kBf16), Precision::kFp32);
    auto bad = resolve_precision("fp16", has);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code, ErrorCode::kUsage);
  }
}

TEST(Bf16Precision, OnlyIsasWithBf16InstructionsCount) {
  // dnnl_cpu_isa_t values of oneDNN 2.6 (dnnl_types.h).
  EXPECT_FALSE(cpu_isa_has_bf16(0x7));    // avx2
  EXPECT_FALSE(cpu_isa_has_bf16(0x407));  // avx2_vnni
  EXPECT_FALSE(cpu_isa_has_bf16(0x27));   // avx512_core
  EXPECT_FALSE(cpu_isa_has_bf16(0x67));   // avx512_core_vnni
  EXPECT_TRUE(cpu_isa_has_bf16(0xe7));    // avx512_core_bf16
  EXPECT_TRUE(cpu_isa_has_bf16(0x3e7));   // avx512_core_amx
}

struct Bf16ConvCase {
  int c, h, w, oc, k, stride, pad;
  bool relu_and_residual;  // Conv + Relu + Add (a FusedConv with an eltwise and a sum post op)
};

class Bf16Conv : public ::testing::TestWithParam<Bf16ConvCase> {};

// Writes into `b` (OnnxBuilder holds a pointer into its own model: not returned by value) the
// case's convolution (bias, random weights) and what follows it: with relu_and_residual a Relu and
// an Add of the input (same shape as the output: needs c == oc, stride 1, 'same' padding), else
// `plain_tail`: "Identity", or "SiLU" (Sigmoid and Mul: the post ops our own pass runs).
void build_conv_model(OnnxBuilder& b, const Bf16ConvCase& k, const std::string& plain_tail) {
  b.input("x", {1, k.c, k.h, k.w});
  b.random_initializer("w", {k.oc, k.c, k.k, k.k}, -0.5f, 0.5f);
  b.random_initializer("b", {k.oc}, -0.5f, 0.5f);
  auto* conv = b.node("Conv", {"x", "w", "b"}, {"c"});
  OnnxBuilder::attr_ints(conv, "strides", {k.stride, k.stride});
  OnnxBuilder::attr_ints(conv, "pads", {k.pad, k.pad, k.pad, k.pad});
  if (k.relu_and_residual) {
    b.node("Relu", {"c"}, {"r"});
    b.node("Add", {"r", "x"}, {"y"});
  } else if (plain_tail == "SiLU") {
    b.node("Sigmoid", {"c"}, {"s"});
    b.node("Mul", {"c", "s"}, {"y"});
  } else {
    b.node("Identity", {"c"}, {"y"});
  }
  b.output("y");
}

TEST_P(Bf16Conv, MatchesTheFloat32Engine) {
  SKIP_WITHOUT_BF16();
  const Bf16ConvCase k = GetParam();
  OnnxBuilder b;
  build_conv_model(b, k, "Identity");
  const Shape shape{1, k.c, k.h, k.w};
  const HostTensor x = random_tensor(shape, 3);
  Loaded bf16 = load(b.bytes(), false, Precision::kBf16), fp32 = load(b.bytes(), false, Precision::kFp32);
  ASSERT_TRUE(bf16.session && fp32.session);
  // A 3x3 stride-1 node is timed at load between oneDNN's bf16 kernel and our Winograd (bf16 or
  // float32): either a bf16 step or our float32 Winograd.
  const bool wino_shape = k.k == 3 && k.stride == 1 && k.c % 8 == 0 && k.oc % 8 == 0 && cpu::active_isa() >= cpu::Isa::kAvx2;
  const int float_wino = steps_named(bf16, shape, "wino_4x3") - steps_named(bf16, shape, "wino_4x3:avx512_bf16");
  EXPECT_EQ(bf16_steps(bf16, shape) + (wino_shape ? float_wino : 0), 1);
  EXPECT_EQ(bf16_steps(fp32, shape), 0);
  auto got = run(bf16, x), want = run(fp32, x);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(want.size(), 1u);
  const bool bf16_wino = steps_named(bf16, shape, "wino_4x3:avx512_bf16") > 0;
  EXPECT_LT(worst_relative_error(got[0], want[0]), bf16_wino ? kBf16WinogradBound : 1e-2);
}

bool same_bytes(const HostTensor& a, const HostTensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
}

// Under bf16 a node that oneDNN's bf16 convolution runs has oneDNN's float32 convolution as a
// second candidate (conv_choice.h; our Winograd kept out here, it has its own tests): forced, it
// is the float32 engine's result to the byte and named without "(bf16)"; an index past it takes
// it too; the timed choice takes one of the two, named as what it is, so it is never less
// accurate than bf16 alone.
TEST_P(Bf16Conv, TheFloat32CandidateIsTheFloat32EngineAndTheTimedChoiceOneOfTheTwo) {
  SKIP_WITHOUT_BF16();
  const Bf16ConvCase k = GetParam();
  OnnxBuilder b;
  build_conv_model(b, k, "SiLU");
  const Shape shape{1, k.c, k.h, k.w};
  const HostTensor x = random_tensor(shape, 5);
  const auto onednn = Conv3x3Choice::kOneDnn;
  Loaded bf16 = load(b.bytes(), false, Precision::kBf16, onednn, 0), f32 = load(b.bytes(), false, Precision::kBf16, onednn, 1),
         past = load(b.bytes(), false, Precision::kBf16, onednn, 5), timed = load(b.bytes(), false, Precision::kBf16, onednn, kTimedCandidate),
         fp32 = load(b.bytes(), false, Precision::kFp32, onednn);
  ASSERT_TRUE(bf16.session && f32.session && past.session && timed.session && fp32.session);
  EXPECT_EQ(bf16_steps(bf16, shape), 1);
  EXPECT_EQ(bf16_steps(f32, shape), 0);
  EXPECT_EQ(bf16_steps(past, shape), 0);
  const auto y_bf16 = run(bf16, x), y_f32 = run(f32, x), y_past = run(past, x), y_timed = run(timed, x), y_fp32 = run(fp32, x);
  ASSERT_EQ(y_bf16.size(), 1u);
  ASSERT_EQ(y_f32.size(), 1u);
  ASSERT_EQ(y_past.size(), 1u);
  ASSERT_EQ(y_timed.size(), 1u);
  ASSERT_EQ(y_fp32.size(), 1u);
  EXPECT_TRUE(same_bytes(y_f32[0], y_fp32[0]));
  EXPECT_TRUE(same_bytes(y_past[0], y_fp32[0]));
  EXPECT_FALSE(same_bytes(y_bf16[0], y_fp32[0])) << "bf16 forced, yet the float32 engine's bytes";
  const bool took_bf16 = bf16_steps(timed, shape) == 1;
  EXPECT_TRUE(same_bytes(y_timed[0], took_bf16 ? y_bf16[0] : y_fp32[0])) << (took_bf16 ? "named bf16" : "named float32");
  EXPECT_LE(worst_relative_error(y_timed[0], y_fp32[0]), worst_relative_error(y_bf16[0], y_fp32[0]));
}

INSTANTIATE_TEST_SUITE_P(Shapes, Bf16Conv,
                         ::testing::Values(Bf16ConvCase{16, 20, 24, 32, 3, 1, 1, false},  // 3x3 (float32 would take Winograd)
                                           Bf16ConvCase{64, 9, 13, 64, 3, 1, 1, true},   // with a fused Relu and residual sum
                                           Bf16ConvCase{32, 16, 16, 48, 1, 1, 0, false},  // 1x1
                                           Bf16ConvCase{24, 17, 15, 40, 3, 2, 1, false},  // strided, odd sizes
                                           Bf16ConvCase{12, 32, 32, 20, 3, 2, 1, false}));  // channels not multiples of 16

// Our Winograd with its bf16 GEMM, F(4x4, 3x3) and F(6x6, 3x3) (forced, as the timed choice may take another kernel) inside the
// engine: named in the plan, and close to the float32 engine (a plain Conv, one with SiLU
// (Mul(x, Sigmoid(x)) fused), and one with a residual Add).
TEST(Bf16Precision, Bf16WinogradMatchesTheFloat32Engine) {
  SKIP_WITHOUT_BF16();
  if (cpu::active_isa() < cpu::Isa::kAvx512Bf16)
    GTEST_SKIP() << "our bf16 Winograd needs AVX512_BF16 for our kernels; they run " << cpu::isa_name(cpu::active_isa());
  for (const int epilogue : {0, 1, 2}) {
    for (const Conv3x3Choice tile : {Conv3x3Choice::kWinograd, Conv3x3Choice::kWinograd6x6}) {
    const bool six = tile == Conv3x3Choice::kWinograd6x6;
    OnnxBuilder b;
    b.input("x", {1, 32, 18, 22});
    b.random_initializer("w", {32, 32, 3, 3}, -0.3f, 0.3f);
    b.random_initializer("b", {32}, -0.5f, 0.5f);
    auto* conv = b.node("Conv", {"x", "w", "b"}, {"c"});
    OnnxBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
    if (epilogue == 1) {
      b.node("Sigmoid", {"c"}, {"s"});
      b.node("Mul", {"c", "s"}, {"y"});
    } else if (epilogue == 2) {
      b.node("Add", {"c", "x"}, {"y"});
    } else {
      b.node("Identity", {"c"}, {"y"});
    }
    b.output("y");
    const Shape shape{1, 32, 18, 22};
    const HostTensor x = random_tensor(shape, 11);
    Loaded bf16 = load(b.bytes(), false, Precision::kBf16, tile), fp32 = load(b.bytes(), false, Precision::kFp32, tile);
    ASSERT_TRUE(bf16.session && fp32.session);
    EXPECT_EQ(steps_named(bf16, shape, six ? "streamdet:wino_6x3:avx512_bf16 (bf16)" : "streamdet:wino_4x3:avx512_bf16 (bf16)"), 1)
        << "epilogue " << epilogue;
    EXPECT_EQ(bf16_steps(fp32, shape), 0);
    auto got = run(bf16, x), want = run(fp32, x);
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(want.size(), 1u);
    const double err = worst_relative_error(got[0], want[0]);
    EXPECT_LT(err, six ? kBf16Winograd6x6Bound : kBf16WinogradBound) << "epilogue " << epilogue << (six ? ", F(6x6)" : "");
    EXPECT_GT(err, 0) << "epilogue " << epilogue << ": identical to float32, so not computed in bf16";
    }
  }
}

// MatMul with constant weights (B) runs in bf16 too; with B computed at run time it stays float32.
TEST(Bf16Precision, MatMulWithConstantWeightsMatchesTheFloat32Engine) {
  SKIP_WITHOUT_BF16();
  OnnxBuilder b;
  b.input("x", {2, 37, 96});
  b.random_initializer("w", {96, 80}, -0.5f, 0.5f);
  b.node("MatMul", {"x", "w"}, {"y"});
  b.node("MatMul", {"x", "x_t"}, {"z"});  // B from the input: float32
  auto* t = b.node("Transpose", {"x"}, {"x_t"});
  OnnxBuilder::attr_ints(t, "perm", {0, 2, 1});
  b.output("y");
  b.output("z");
  const Shape shape{2, 37, 96};
  const HostTensor x = random_tensor(shape, 9);
  Loaded bf16 = load(b.bytes(), false, Precision::kBf16), fp32 = load(b.bytes(), false, Precision::kFp32);
  ASSERT_TRUE(bf16.session && fp32.session);
  EXPECT_EQ(bf16_steps(bf16, shape), 1);
  auto got = run(bf16, x), want = run(fp32, x);
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(want.size(), 2u);
  EXPECT_LT(worst_relative_error(got[0], want[0]), 1e-2);
  EXPECT_LT(worst_relative_error(got[1], want[1]), 1e-6);
}

// The bundled detector ([1, 4 + nc, N] raw output) on a synthetic frame: the raw outputs close,
// and the confident boxes the same objects.
struct Box {
  float x1, y1, x2, y2, score;
  int cls;
};

std::vector<Box> confident_boxes(const HostTensor& out, float conf) {
  const int rows = static_cast<int>(out.shape()[1]), n = static_cast<int>(out.shape()[2]);
  const float* p = out.as<float>();
  std::vector<Box> boxes;
  for (int i = 0; i < n; ++i) {
    int best = 0;
    for (int c = 1; c < rows - 4; ++c)
      if (p[(4 + c) * n + i] > p[(4 + best) * n + i]) best = c;
    const float s = p[(4 + best) * n + i];
    if (s < conf) continue;
    const float cx = p[i], cy = p[n + i], w = p[2 * n + i], h = p[3 * n + i];
    boxes.push_back({cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, s, best});
  }
  return boxes;
}

float box_iou(const Box& a, const Box& b) {
  Detection da, db;
  da.x1 = a.x1, da.y1 = a.y1, da.x2 = a.x2, da.y2 = a.y2;
  db.x1 = b.x1, db.y1 = b.y1, db.x2 = b.x2, db.y2 = b.y2;
  return iou(da, db);
}

TEST(Bf16Precision, BundledDetectorFindsTheSameObjects) {
  SKIP_WITHOUT_BF16();
  const std::string path = std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8.onnx";
  synth::SceneOptions options;  // 320x192
  options.seed = 4242;
  options.num_objects = 8;
  cv::Mat frame, canvas(256, 256, CV_8UC3, cv::Scalar(114, 114, 114)), resized;
  std::vector<synth::TruthBox> truth;
  synth::SyntheticScene(options).render(5, frame, truth);
  cv::resize(frame, resized, cv::Size(256, 154));  // letterboxed into the model's 256x256
  resized.copyTo(canvas(cv::Rect(0, 51, 256, 154)));
  HostTensor x(DType::kFloat32, Shape{1, 3, 256, 256});
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 256; ++y)
      for (int xx = 0; xx < 256; ++xx) x.as<float>()[(c * 256 + y) * 256 + xx] = canvas.at<cv::Vec3b>(y, xx)[2 - c] / 255.f;

  // Our Winograd forced in bf16 (its 3x3 stride-1 layers in our bf16 Winograd where the processor
  // has AVX512_BF16, whatever the timing at load would pick), the rest oneDNN's bf16.
  Loaded bf16 = load(path, true, Precision::kBf16, Conv3x3Choice::kWinograd), fp32 = load(path, true, Precision::kFp32);
  ASSERT_TRUE(bf16.session && fp32.session);
  EXPECT_GT(bf16_steps(bf16, x.shape()), 3);
  if (cpu::active_isa() >= cpu::Isa::kAvx512Bf16) EXPECT_GT(steps_named(bf16, x.shape(), "wino_4x3:avx512_bf16"), 3);
  auto got = run(bf16, x), want = run(fp32, x);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(want.size(), 1u);
  EXPECT_LT(worst_relative_error(got[0], want[0]), 1e-2);

  const auto a = confident_boxes(want[0], 0.5f), b = confident_boxes(got[0], 0.4f);
  ASSERT_GE(a.size(), 5u) << "the float32 model should see the scene's objects";
  int matched = 0;
  for (const Box& fa : a)
    matched += std::any_of(b.begin(), b.end(), [&](const Box& fb) { return fb.cls == fa.cls && box_iou(fa, fb) > 0.9f; });
  EXPECT_GE(matched, static_cast<int>(a.size() * 9 / 10)) << matched << " of " << a.size() << " float32 boxes found in bf16";
}

// As a user sees it: a value other than auto/fp32/fp16/bf16, fp16 on the CPU (run and model-info),
// and bf16 with the opencv engine, are refused with exit 2 and one line naming --precision; where
// the CPU has bf16, a run with it finishes and writes detections, and model-info shows the bf16 steps.
TEST(Bf16PrecisionCli, BadValuesAreUsageErrorsAndBf16Runs) {
  test::TempDir dir;
  const std::string source = "synth:w=320,h=192,fps=30,frames=10";
  for (const auto& args : {std::vector<std::string>{"run", "-m", test::kTinyModel, "-s", source, "--precision", "fp8"},
                           std::vector<std::string>{"run", "-m", test::kTinyModel, "-s", source, "--device", "cpu", "--precision", "fp16"},
                           std::vector<std::string>{"model-info", "-m", test::kTinyModel, "--device", "cpu", "--precision", "fp16"},
                           std::vector<std::string>{"run", "-m", test::kTinyModel, "-s", source, "--engine", "opencv", "--precision", "bf16"}}) {
    test::CliResult r = test::run_cli(dir, args);
    EXPECT_EQ(r.code, exit_code::kUsage) << r.err;
    EXPECT_NE(test::last_line(r.err).find("--precision"), std::string::npos) << r.err;
  }
  SKIP_WITHOUT_BF16();
  test::CliResult r = test::run_cli(dir, {"run", "-m", test::kTinyModel, "-s", source, "-d", dir.file("d.jsonl"), "--precision", "bf16"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(test::count_valid_jsonl_lines(dir.file("d.jsonl")), 10) << r.err;
  // model-info plans in bf16 too and names the bf16 steps.
  test::SpawnOptions to_file;
  to_file.stdout_path = dir.file("info.txt");
  r = test::run_cli(dir, {"model-info", "-m", test::kTinyModel, "--precision", "bf16", "--steps"}, to_file);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(test::read_file(dir.file("info.txt")).find("(bf16)"), std::string::npos);
}

}  // namespace
}  // namespace sd::native
