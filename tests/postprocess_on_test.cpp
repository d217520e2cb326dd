// --postprocess-on (runtime/postprocess_on.h): where the head is decoded and NMS'd, the head the
// GPU kernels are given (from the CPU decoder), what the command says where it cannot, and on a
// GPU the kept boxes of the decode on the device output against the CPU decoder's on the host
// copy, through the same context (skipped without one).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "engine/engine_registry.h"
#include "engine/gpu_head_on_device.h"
#include "model/model_info.h"
#include "postprocess/decoder.h"
#include "postprocess/detection_parity.h"
#include "postprocess/postprocessor.h"
#include "postprocess/yolov5_decoder.h"
#include "postprocess/yolov8_decoder.h"
#include "postprocess/yolox_decoder.h"
#include "preprocess/letterbox.h"
#include "preprocess/preprocess_spec.h"
#include "runtime/postprocess_on.h"
#include "synthetic/scene.h"
#include "test_util.h"

namespace sd {
namespace {

// A context's capability as the decision sees it (nothing is decoded through it here).
class NamedDetectOutput final : public GpuDetectOutput {
 public:
  Status detect(const GpuDetectHead&, const GpuDetectParams&, int, Detections&) override { return ok(); }
  std::string where() const override { return "cuda:0 (test)"; }
};

// A head the GPU does not decode.
class OtherDecoder final : public Decoder {
 public:
  Layout layout() const override { return Layout::kYoloV10; }
  int num_classes() const override { return 80; }
  void decode(std::span<const TensorView>, int, const DecodeOptions&, Detections&) const override {}
};

const YoloV8Decoder kV8(YoloV8Head{1, 80, true});

TEST(PostprocessOn, AutoTakesTheGpuOnlyWhereTheContextCanAndTheHeadIsOneItDecodes) {
  NamedDetectOutput detect;
  auto gpu = choose_postprocess_place("auto", "cuda:0", "native", &detect, kV8, {});
  ASSERT_TRUE(gpu) << gpu.error().message;
  EXPECT_TRUE(gpu->gpu);
  EXPECT_EQ(gpu->where, "cuda:0 (test)");
  EXPECT_EQ(gpu->head.kind, GpuDetectHead::Kind::kYoloV8);
  for (auto [device, d] : {std::pair<const char*, GpuDetectOutput*>{"cpu", nullptr}, {"cuda:0", nullptr}, {"cpu", &detect}}) {
    auto cpu = choose_postprocess_place("auto", device, "native", d, kV8, {});
    ASSERT_TRUE(cpu) << cpu.error().message;
    EXPECT_FALSE(cpu->gpu) << device;
    EXPECT_EQ(cpu->where, "cpu");
    EXPECT_TRUE(cpu->why_cpu.empty()) << "nothing to say where there is no GPU context";
  }
  // A GPU context, a head the kernels do not decode: the CPU, and why (said once by the run).
  auto other = choose_postprocess_place("auto", "cuda:0", "native", &detect, OtherDecoder{}, {});
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_FALSE(other->gpu);
  EXPECT_NE(other->why_cpu.find("yolov10"), std::string::npos) << other->why_cpu;
}

TEST(PostprocessOn, CpuIsAlwaysTheCpu) {
  NamedDetectOutput detect;
  auto cpu = choose_postprocess_place("cpu", "cuda:0", "native", &detect, kV8, {});
  ASSERT_TRUE(cpu);
  EXPECT_FALSE(cpu->gpu);
  EXPECT_EQ(choose_postprocess_place("gpus", "cuda:0", "native", &detect, kV8, {}).error().code, ErrorCode::kUsage);
}

TEST(PostprocessOn, GpuWhereItCannotBeIsOneLineWithItsCode) {
  NamedDetectOutput detect;
  auto no_gpu = choose_postprocess_place("gpu", "cpu", "native", nullptr, kV8, {});
  ASSERT_FALSE(no_gpu);
  EXPECT_EQ(no_gpu.error().code, ErrorCode::kModel);
  EXPECT_NE(no_gpu.error().message.find("--postprocess-on gpu: the model runs on cpu"), std::string::npos) << no_gpu.error().message;
  auto engine = choose_postprocess_place("gpu", "cuda:0", "opencv", nullptr, kV8, {});
  ASSERT_FALSE(engine);
  EXPECT_EQ(engine.error().code, ErrorCode::kUnsupported);
  auto head = choose_postprocess_place("gpu", "cuda:0", "native", &detect, OtherDecoder{}, {});
  ASSERT_FALSE(head);
  EXPECT_EQ(head.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(head.error().message.find("yolov10"), std::string::npos) << head.error().message;
}

TEST(PostprocessOn, TheGpusHeadIsTheCpuDecodersHead) {
  auto v8 = gpu_head_of(kV8, {});
  ASSERT_TRUE(v8);
  EXPECT_EQ(v8->kind, GpuDetectHead::Kind::kYoloV8);
  EXPECT_EQ(v8->output, 1);
  EXPECT_EQ(v8->num_classes, 80);
  EXPECT_TRUE(v8->transposed);
  auto v5 = gpu_head_of(YoloV5Decoder(YoloV5Head{0, 3}), {});
  ASSERT_TRUE(v5);
  EXPECT_EQ(v5->kind, GpuDetectHead::Kind::kYoloV5);
  EXPECT_EQ(v5->num_classes, 3);
  // YOLOX: its strides, and the decode's input size over the head's own (as the CPU decoder).
  const YoloXDecoder x(YoloXHead{0, 2, {8, 16, 32, 64}, 320, 320});
  DecodeOptions d;
  d.input_width = 640, d.input_height = 384;
  auto gx = gpu_head_of(x, d);
  ASSERT_TRUE(gx);
  EXPECT_EQ(gx->kind, GpuDetectHead::Kind::kYoloX);
  EXPECT_EQ(gx->num_strides, 4);
  EXPECT_EQ(gx->strides[3], 64);
  EXPECT_EQ(gx->input_width, 640);
  EXPECT_EQ(gx->input_height, 384);
  EXPECT_EQ(gpu_head_of(x, {})->input_width, 320);
  // More grids than the kernel takes: the CPU.
  EXPECT_FALSE(gpu_head_of(YoloXDecoder(YoloXHead{0, 2, {8, 16, 32, 64, 128}, 320, 320}), {}));
  EXPECT_FALSE(gpu_head_of(OtherDecoder{}, {}));
}

// The command: a bad value is a usage error; gpu where the model runs on the CPU is one line and
// exit 3; auto on the CPU runs and the profile says the postprocess ran on the CPU.
TEST(PostprocessOn, CommandRefusesGpuOnTheCpuAndProfileSaysWhere) {
  test::TempDir dir;
  const std::string synth = "synth:w=320,h=192,frames=3";
  test::CliResult bad = test::run_cli(dir, {"run", "-m", test::kTinyModel, "-s", synth, "--postprocess-on", "gpus", "-q"});
  EXPECT_EQ(bad.code, 2) << bad.err;
  test::CliResult gpu = test::run_cli(dir, {"run", "-m", test::kTinyModel, "-s", synth, "--device", "cpu", "--postprocess-on", "gpu", "-q"});
  EXPECT_EQ(gpu.code, 3) << gpu.err;
  EXPECT_NE(test::last_line(gpu.err).find("--postprocess-on gpu: the model runs on cpu"), std::string::npos) << gpu.err;
  const std::string profile = dir.file("profile.json");
  test::CliResult cpu = test::run_cli(dir, {"run", "-m", test::kTinyModel, "-s", synth, "--device", "cpu", "--postprocess-on", "auto",
                                            "--profile-json", profile, "-q"});
  ASSERT_EQ(cpu.code, 0) << cpu.err;
  std::ifstream in(profile);
  const nlohmann::json j = nlohmann::json::parse(in);
  int seen = 0;
  for (const auto& s : j.at("stages"))
    if (s.at("stage") == "postprocess") {
      EXPECT_EQ(s.at("ran_on"), "cpu") << s.dump();
      ++seen;
    }
  EXPECT_EQ(seen, 1);
}

}  // namespace
}  // namespace sd

// ---- On a GPU (skipped elsewhere): the kept boxes of the decode on the device output and of the
// CPU decoder on the host copy of the same run find the same objects (classes equal, every
// corner within 1 px), in float32 and in fp16 storage, one image and a batch.
#ifdef STREAMDET_HAVE_CUDA
#include <cuda_runtime_api.h>

namespace sd {
namespace {

std::string no_gpu() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no usable GPU: ") + cudaGetErrorString(e);
  if (n == 0) return "no GPU";
  return {};
}

void expect_gpu_decode_matches_cpu(const std::string& model_path, int batch, const std::string& precision) {
  if (const std::string why = no_gpu(); !why.empty()) GTEST_SKIP() << why;
  auto info = inspect_model(model_path);
  ASSERT_TRUE(info) << info.error().message;
  EngineOptions eo;
  eo.device = "cuda";
  eo.precision = precision;
  auto engine = load_engine("native", *info, eo);
  ASSERT_TRUE(engine) << engine.error().message;
  auto ctx = (*engine)->create_context({2});
  ASSERT_TRUE(ctx) << ctx.error().message;
  GpuDetectOutput* detect = (*ctx)->gpu_detect_output();
  ASSERT_NE(detect, nullptr) << "the native engine on a GPU decodes there";
  auto made = make_decoder(Layout::kAuto, (*engine)->outputs(), *info, 256, 256);
  ASSERT_TRUE(made) << made.error().message;
  std::shared_ptr<const Decoder> decoder = std::move(*made);
  const DecodeOptions decode{};
  const NmsOptions nms{};
  auto head = gpu_head_of(*decoder, decode);
  ASSERT_TRUE(head) << "the bundled model's head is one the GPU decodes";
  const GpuDetectParams params{decode.conf_threshold, nms.iou_threshold, nms.agnostic, nms.max_det};
  Postprocessor post(decoder, decode, nms);
  synth::SceneOptions so;
  so.width = 256, so.height = 256, so.seed = 1201, so.num_objects = 7;
  synth::SyntheticScene scene(so);
  const PreprocessSpec spec = spec_for_layout(decoder->layout());
  PreprocessScratch scratch;
  int compared = 0;
  for (int round = 0; round < 5; ++round) {
    Tensor input(Shape{batch, 3, 256, 256});
    const int64_t per = 3 * int64_t{256} * 256;
    for (int b = 0; b < batch; ++b) {
      cv::Mat img;
      std::vector<synth::TruthBox> truth;
      scene.render(round * 5 + b, img, truth);
      preprocess_frame(img, cv::Size(256, 256), spec, input.data() + b * per, scratch);
    }
    std::vector<Tensor> out;
    // From round 2 on the head stays on the device (its host copy skipped): the CPU decoder's
    // reference reads the late copy (host_output).
    const bool keep = round >= 2;
    auto* keeper = dynamic_cast<GpuHeadOnDevice*>(detect);
    ASSERT_NE(keeper, nullptr) << "the native context can keep its head on the device";
    ASSERT_TRUE(keeper->keep_on_device(head->output, keep));
    ASSERT_TRUE((*ctx)->infer(input.view(), out));
    if (keep) ASSERT_TRUE(keeper->host_output(head->output, out[static_cast<size_t>(head->output)]));
    std::vector<TensorView> views;
    for (auto& t : out) views.push_back(t.view());
    for (int b = 0; b < batch; ++b) {
      Detections want, got;
      post.run(views, b, want);
      Status st = detect->detect(*head, params, b, got);
      ASSERT_TRUE(st) << st.error().message;
      // The same values decoded: only float rounding of the box arithmetic may differ.
      const DetectionParity parity = compare_detections(want, got, decode.conf_threshold, 0.001f, 1.0f);
      EXPECT_TRUE(parity.same()) << "round " << round << " image " << b << ": missing " << parity.missing << ", extra "
                                 << parity.extra << ", worst corner " << parity.max_corner_px << " px";
      EXPECT_LE(parity.max_corner_px, 1.0);
      compared += parity.matched;
    }
  }
  EXPECT_GT(compared, 10);
}

TEST(PostprocessOnGpu, DecodeOnTheDeviceFindsWhatTheCpuDecoderFinds) { expect_gpu_decode_matches_cpu(test::kTinyModel, 1, "fp32"); }
TEST(PostprocessOnGpu, Fp16HeadWidenedOnTheDeviceFindsWhatTheCpuDecoderFinds) { expect_gpu_decode_matches_cpu(test::kTinyModel, 1, "fp16"); }
TEST(PostprocessOnGpu, BatchDecodedOnTheDeviceFindsWhatTheCpuDecoderFinds) { expect_gpu_decode_matches_cpu(test::kTinyDynamicModel, 3, "fp32"); }

}  // namespace
}  // namespace sd
#else
TEST(PostprocessOnGpu, NeedsTheCudaBuild) { GTEST_SKIP() << "built without the CUDA toolkit (STREAMDET_CUDA)"; }
#endif
