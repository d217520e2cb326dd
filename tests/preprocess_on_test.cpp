// --preprocess-on (runtime/preprocess_on.h): where frames are letterboxed, the GPU placement the
// kernel is given (preprocess/gpu_placement.h), what the command says where it cannot, and on a
// GPU the detections of frames letterboxed there against the CPU's letterbox (skipped without one).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>

#include "cli_util.h"
#include "fake_engine.h"
#include "runtime/interrupt.h"
#include "runtime/pipeline.h"
#include "engine/engine_registry.h"
#include "gpu_frames_vectors.h"
#include "model/model_info.h"
#include "postprocess/decoder.h"
#include "postprocess/detection_parity.h"
#include "postprocess/postprocessor.h"
#include "preprocess/gpu_placement.h"
#include "preprocess/letterbox.h"
#include "runtime/preprocess_on.h"
#include "synthetic/scene.h"
#include "test_util.h"

namespace sd {
namespace {

// A context's capability as the decision sees it (nothing is put through it here).
class NamedFrameInput final : public GpuFrameInput {
 public:
  Status put_bgr(int, int, const uint8_t*, int, int, int64_t, const GpuInputPlacement&) override { return ok(); }
  Status put_i420(int, int, const uint8_t*, int, int, const GpuInputPlacement&) override { return ok(); }
  Status put_nv12_device(int, int, const DeviceNv12&, const GpuInputPlacement&) override { return ok(); }
  Status infer_put(std::vector<Tensor>&) override { return ok(); }
  std::string where() const override { return "cuda:0 (test)"; }
};

TEST(PreprocessOn, AutoTakesTheGpuOnlyWhereTheContextCan) {
  NamedFrameInput frames;
  auto gpu = choose_preprocess_place("auto", "cuda:0", "native", &frames);
  ASSERT_TRUE(gpu) << gpu.error().message;
  EXPECT_TRUE(gpu->gpu);
  EXPECT_EQ(gpu->where, "cuda:0 (test)");
  for (auto [device, f] : {std::pair<const char*, GpuFrameInput*>{"cpu", nullptr}, {"cuda:0", nullptr}, {"cpu", &frames}}) {
    auto cpu = choose_preprocess_place("auto", device, "native", f);
    ASSERT_TRUE(cpu) << cpu.error().message;
    EXPECT_FALSE(cpu->gpu) << device;
    EXPECT_EQ(cpu->where, "cpu");
  }
}

TEST(PreprocessOn, CpuIsAlwaysTheCpu) {
  NamedFrameInput frames;
  auto r = choose_preprocess_place("cpu", "cuda:0", "native", &frames);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->gpu);
}

TEST(PreprocessOn, GpuWhereItCannotBeIsOneLineWithItsCode) {
  NamedFrameInput frames;
  auto ok_gpu = choose_preprocess_place("gpu", "cuda:1", "native", &frames);
  ASSERT_TRUE(ok_gpu);
  EXPECT_TRUE(ok_gpu->gpu);
  auto no_gpu = choose_preprocess_place("gpu", "cpu", "native", nullptr);
  ASSERT_FALSE(no_gpu);
  EXPECT_EQ(no_gpu.error().code, ErrorCode::kModel);  // exit 3, as --device cuda without a GPU
  EXPECT_NE(no_gpu.error().message.find("--preprocess-on gpu"), std::string::npos);
  EXPECT_EQ(no_gpu.error().message.find('\n'), std::string::npos);
  auto no_capability = choose_preprocess_place("gpu", "cuda:0", "opencv", nullptr);
  ASSERT_FALSE(no_capability);
  EXPECT_EQ(no_capability.error().code, ErrorCode::kUnsupported);  // exit 6
  EXPECT_NE(no_capability.error().message.find("opencv"), std::string::npos);
  auto bad = choose_preprocess_place("gpus", "cuda:0", "native", &frames);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kUsage);
}

// What the kernel is given is what the CPU letterbox does: the vectors' placement (itself checked
// against preprocess_frame in gpu_frames_reference_test.cpp) for every case, field by field.
TEST(PreprocessOn, GpuPlacementIsTheCpuLetterbox) {
  auto cases = test::gpu_frames::bgr_cases();
  for (const auto& f : test::gpu_frames::nv12_cases()) cases.push_back(f);
  for (const auto& f : cases) {
    const auto t = LetterboxTransform::compute({f.src_w, f.src_h}, {f.dst_w, f.dst_h}, f.spec.resize, f.spec.pad);
    const GpuInputPlacement got = gpu_input_placement(t, f.spec);
    const GpuInputPlacement want = test::gpu_frames::placement_for(f);
    const std::string name = std::to_string(f.src_w) + "x" + std::to_string(f.src_h) + " " + f.spec.str();
    EXPECT_EQ(got.dst_width, want.dst_width) << name;
    EXPECT_EQ(got.dst_height, want.dst_height) << name;
    EXPECT_EQ(got.content_width, want.content_width) << name;
    EXPECT_EQ(got.content_height, want.content_height) << name;
    EXPECT_EQ(got.x0, want.x0) << name;
    EXPECT_EQ(got.y0, want.y0) << name;
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(got.src_channel[c], want.src_channel[c]) << name;
      EXPECT_FLOAT_EQ(got.mul[c], want.mul[c]) << name;
      EXPECT_FLOAT_EQ(got.add[c], want.add[c]) << name;
      EXPECT_FLOAT_EQ(got.pad[c], want.pad[c]) << name;
    }
  }
}

// The command: a bad value is a usage error; gpu on a machine where the model runs on the CPU is
// one line and exit 3; auto runs, and the profile says the preprocess ran on the CPU.
TEST(PreprocessOn, CommandRefusesGpuOnTheCpuAndProfileSaysWhere) {
  test::TempDir dir;
  const std::string synth = "synth:w=320,h=192,frames=3";
  test::CliResult bad = test::run_cli(dir, {"run", "-m", test::kTinyModel, "-s", synth, "--preprocess-on", "gpus", "-q"});
  EXPECT_EQ(bad.code, 2) << bad.err;
  test::CliResult gpu = test::run_cli(dir, {"run", "-m", test::kTinyModel, "-s", synth, "--device", "cpu", "--preprocess-on", "gpu", "-q"});
  EXPECT_EQ(gpu.code, 3) << gpu.err;
  EXPECT_NE(test::last_line(gpu.err).find("--preprocess-on gpu: the model runs on cpu"), std::string::npos) << gpu.err;
  const std::string profile = dir.file("profile.json");
  test::CliResult cpu = test::run_cli(dir, {"run", "-m", test::kTinyModel, "-s", synth, "--device", "cpu", "--profile-json", profile, "-q"});
  ASSERT_EQ(cpu.code, 0) << cpu.err;
  std::ifstream in(profile);
  const nlohmann::json j = nlohmann::json::parse(in);
  int seen = 0;
  for (const auto& s : j.at("stages")) {
    if (s.at("stage") == "preprocess" || s.at("stage") == "postprocess") {
      EXPECT_EQ(s.at("ran_on"), "cpu") << s.dump();
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);
}

// ---- The pipeline's wiring, on the host: the fake engine's contexts take frames as a GPU context
// does (letterboxed by the kernels' reference, fake_engine.h). Its box follows the input's mean,
// so the detections say whether the frames reached the model letterboxed as the CPU does.
class PreprocessOnPipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_interrupt();
    test::write_minimal_onnx(dir.file("fake.onnx"));
    test::write_numbered_avi(dir.file("a.avi"), 12);  // decoded as I420
  }
  RunOptions options(const std::string& engine, const std::string& source, const std::string& place, const std::string& out) {
    RunOptions o;
    o.model.model = dir.file("fake.onnx");
    o.model.engine = engine;
    o.model.preprocess_on = place;
    o.quiet = true;
    o.sources = {source};
    o.detections = dir.file(out);
    o.track = TrackMode::kOff;
    return o;
  }
  // The boxes of every frame, in frame order.
  std::vector<std::vector<float>> boxes(const std::string& out) {
    std::vector<std::vector<float>> all;
    std::ifstream in(dir.file(out));
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json j = nlohmann::json::parse(line);
      std::vector<float> b;
      for (const auto& d : j.at("detections"))
        for (const auto& v : d.at("box")) b.push_back(v.get<float>());
      all.push_back(b);
    }
    return all;
  }
  void expect_same_boxes(const std::string& a, const std::string& b) {
    const auto want = boxes(a), got = boxes(b);
    ASSERT_EQ(want.size(), got.size());
    ASSERT_FALSE(want.empty());
    for (size_t f = 0; f < want.size(); ++f) {
      ASSERT_EQ(want[f].size(), got[f].size()) << "frame " << f;
      for (size_t i = 0; i < want[f].size(); ++i) EXPECT_NEAR(want[f][i], got[f][i], 1.0) << "frame " << f;
    }
  }
  static std::string ran_on(const ProfileReport& r, const std::string& stage) {
    for (const auto& s : r.stages)
      if (s.name == stage) return s.ran_on;
    return "?";
  }
  test::TempDir dir;
};

TEST_F(PreprocessOnPipeline, FramesTakenByTheContextFindWhatTheCpuLetterboxFinds) {
  for (const std::string source : {std::string("synth:w=320,h=192,frames=12"), dir.file("a.avi")}) {
    test::FakeEngineConfig cfg;
    cfg.gpu_frames = true;
    test::register_fake_engine("gpu-frames", cfg);
    RunOptions cpu = options("gpu-frames", source, "cpu", "cpu.jsonl");
    RunOutcome c = run_detection(cpu);
    ASSERT_TRUE(c.status) << c.status.error().message;
    EXPECT_EQ(cfg.frames_put->load(), 0) << "cpu letterboxes on the CPU";
    EXPECT_EQ(ran_on(c.profile, "preprocess"), "cpu");
    RunOptions gpu = options("gpu-frames", source, "auto", "gpu.jsonl");
    gpu.batch = 3;
    gpu.workers = 2;
    RunOutcome g = run_detection(gpu);
    ASSERT_TRUE(g.status) << g.status.error().message;
    EXPECT_EQ(cfg.frames_put->load(), 12) << source;
    EXPECT_EQ(ran_on(g.profile, "preprocess"), "cuda:0 (fake)");
    EXPECT_EQ(ran_on(g.profile, "postprocess"), "cpu");
    expect_same_boxes("cpu.jsonl", "gpu.jsonl");
  }
}

TEST_F(PreprocessOnPipeline, AFailingGpuLetterboxFallsBackUnderAutoAndFailsTheRunUnderGpu) {
  test::FakeEngineConfig cfg;
  cfg.gpu_frames = true;
  cfg.gpu_frames_fail = true;
  test::register_fake_engine("gpu-frames-fail", cfg);
  const std::string source = "synth:w=320,h=192,frames=8";
  RunOutcome c = run_detection(options("gpu-frames-fail", source, "cpu", "cpu.jsonl"));
  ASSERT_TRUE(c.status) << c.status.error().message;
  RunOutcome a = run_detection(options("gpu-frames-fail", source, "auto", "auto.jsonl"));
  ASSERT_TRUE(a.status) << a.status.error().message;
  expect_same_boxes("cpu.jsonl", "auto.jsonl");
  RunOutcome g = run_detection(options("gpu-frames-fail", source, "gpu", "gpu.jsonl"));
  ASSERT_FALSE(g.status);
  EXPECT_NE(g.status.error().message.find("fake GPU letterbox failed"), std::string::npos) << g.status.error().message;
}

// --postprocess-on: the fake engine's contexts decode their last run "on the GPU" (the plain CPU
// reference, fake_engine.h): auto takes it, the same boxes as the CPU decoder, every image decoded
// there, the profile says where; a failing decode falls back under auto and fails the run under gpu.
TEST_F(PreprocessOnPipeline, PostprocessOnTheContextFindsWhatTheCpuDecoderFinds) {
  test::FakeEngineConfig cfg;
  cfg.gpu_detect = true;
  test::register_fake_engine("gpu-detect", cfg);
  const std::string source = "synth:w=320,h=192,frames=12";
  RunOptions cpu = options("gpu-detect", source, "cpu", "cpu.jsonl");
  cpu.model.postprocess_on = "cpu";
  RunOutcome c = run_detection(cpu);
  ASSERT_TRUE(c.status) << c.status.error().message;
  EXPECT_EQ(cfg.images_detected->load(), 0) << "cpu decodes on the CPU";
  EXPECT_EQ(ran_on(c.profile, "postprocess"), "cpu");
  RunOptions gpu = options("gpu-detect", source, "cpu", "gpu.jsonl");
  gpu.batch = 3;
  gpu.workers = 2;
  RunOutcome g = run_detection(gpu);
  ASSERT_TRUE(g.status) << g.status.error().message;
  EXPECT_EQ(cfg.images_detected->load(), 12);
  EXPECT_EQ(ran_on(g.profile, "postprocess"), "cuda:0 (fake decode)");
  // After each worker's first batch the head stays on the device (its host copy is zeros here).
  EXPECT_GE(cfg.heads_kept->load(), 1);
  expect_same_boxes("cpu.jsonl", "gpu.jsonl");
}

// A decode that fails under auto after the head was kept on the device: the batch's head is
// brought to the host (host_output) and decoded there, the same boxes as the CPU's.
TEST_F(PreprocessOnPipeline, ADecodeFailingWhileTheHeadIsOnTheDeviceDecodesItsHostCopyUnderAuto) {
  test::FakeEngineConfig cfg;
  cfg.gpu_detect = true;
  cfg.gpu_detect_fail_from = 5;
  test::register_fake_engine("gpu-detect-late-fail", cfg);
  const std::string source = "synth:w=320,h=192,frames=10";
  RunOptions cpu = options("gpu-detect-late-fail", source, "cpu", "cpu.jsonl");
  cpu.model.postprocess_on = "cpu";
  RunOutcome c = run_detection(cpu);
  ASSERT_TRUE(c.status) << c.status.error().message;
  RunOptions a = options("gpu-detect-late-fail", source, "cpu", "auto.jsonl");
  a.batch = 2;
  a.workers = 1;
  RunOutcome r = run_detection(a);
  ASSERT_TRUE(r.status) << r.status.error().message;
  EXPECT_EQ(cfg.images_detected->load(), 5);
  EXPECT_GE(cfg.heads_kept->load(), 1) << "the batches after the first kept their head on the device";
  EXPECT_EQ(ran_on(r.profile, "postprocess"), "cpu (after the decode on cuda:0 (fake decode) failed)");
  expect_same_boxes("cpu.jsonl", "auto.jsonl");
}

TEST_F(PreprocessOnPipeline, AFailingGpuDecodeFallsBackUnderAutoAndFailsTheRunUnderGpu) {
  test::FakeEngineConfig cfg;
  cfg.gpu_detect = true;
  cfg.gpu_detect_fail = true;
  test::register_fake_engine("gpu-detect-fail", cfg);
  const std::string source = "synth:w=320,h=192,frames=8";
  RunOptions cpu = options("gpu-detect-fail", source, "cpu", "cpu.jsonl");
  cpu.model.postprocess_on = "cpu";
  RunOutcome c = run_detection(cpu);
  ASSERT_TRUE(c.status) << c.status.error().message;
  RunOutcome a = run_detection(options("gpu-detect-fail", source, "cpu", "auto.jsonl"));
  ASSERT_TRUE(a.status) << a.status.error().message;
  expect_same_boxes("cpu.jsonl", "auto.jsonl");
  EXPECT_EQ(ran_on(a.profile, "postprocess"), "cpu (after the decode on cuda:0 (fake decode) failed)");
  RunOptions gpu = options("gpu-detect-fail", source, "cpu", "gpu.jsonl");
  gpu.model.postprocess_on = "gpu";
  RunOutcome g = run_detection(gpu);
  ASSERT_FALSE(g.status);
  EXPECT_NE(g.status.error().message.find("fake GPU decode failed"), std::string::npos) << g.status.error().message;
}

#ifdef STREAMDET_HAVE_CUDA
}  // namespace
}  // namespace sd
#include <cuda_runtime_api.h>
namespace sd {
namespace {

// ---- On a GPU (skipped elsewhere): the same frames letterboxed by the CPU and by the GPU, through
// the same GPU context, find the same objects (classes equal, every corner within 1 px).
std::string no_gpu() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no usable GPU: ") + cudaGetErrorString(e);
  if (n == 0) return "no GPU";
  return {};
}

void expect_gpu_frames_match_cpu(const std::string& model_path, int batch, bool i420) {
  if (const std::string why = no_gpu(); !why.empty()) GTEST_SKIP() << why;
  auto info = inspect_model(model_path);
  ASSERT_TRUE(info) << info.error().message;
  EngineOptions eo;
  eo.device = "cuda";
  auto engine = load_engine("native", *info, eo);
  ASSERT_TRUE(engine) << engine.error().message;
  auto ctx = (*engine)->create_context({2});
  ASSERT_TRUE(ctx) << ctx.error().message;
  GpuFrameInput* frames = (*ctx)->gpu_frame_input();
  ASSERT_NE(frames, nullptr) << "the native engine on a GPU letterboxes frames there";
  auto made = make_decoder(Layout::kAuto, (*engine)->outputs(), *info, 256, 256);
  ASSERT_TRUE(made) << made.error().message;
  std::shared_ptr<const Decoder> decoder = std::move(*made);
  const PreprocessSpec spec = spec_for_layout(Layout::kYoloV8);
  const cv::Size dst(256, 256);
  synth::SceneOptions so;
  so.width = 320, so.height = 192, so.seed = 977, so.num_objects = 7;
  synth::SyntheticScene scene(so);
  PreprocessScratch scratch;
  Postprocessor post(decoder, DecodeOptions{}, NmsOptions{});
  int compared = 0;
  for (int round = 0; round < 4; ++round) {
    std::vector<cv::Mat> images(static_cast<size_t>(batch)), yuv(static_cast<size_t>(batch));
    std::vector<LetterboxTransform> transforms;
    Tensor input(Shape{batch, 3, dst.height, dst.width});
    const int64_t per = 3 * int64_t{dst.height} * dst.width;
    for (int b = 0; b < batch; ++b) {
      std::vector<synth::TruthBox> truth;
      scene.render(round * 5 + b, images[static_cast<size_t>(b)], truth);
      if (i420) {
        cv::cvtColor(images[static_cast<size_t>(b)], yuv[static_cast<size_t>(b)], cv::COLOR_BGR2YUV_I420);
        transforms.push_back(preprocess_i420(yuv[static_cast<size_t>(b)], dst, spec, input.data() + b * per, scratch));
      } else {
        transforms.push_back(preprocess_frame(images[static_cast<size_t>(b)], dst, spec, input.data() + b * per, scratch));
      }
    }
    std::vector<Tensor> cpu_out, gpu_out;
    ASSERT_TRUE((*ctx)->infer(input.view(), cpu_out));
    for (int b = 0; b < batch; ++b) {
      const GpuInputPlacement p = gpu_input_placement(transforms[static_cast<size_t>(b)], spec);
      const cv::Mat& img = images[static_cast<size_t>(b)];
      Status st = i420 ? frames->put_i420(b, batch, yuv[static_cast<size_t>(b)].ptr<uint8_t>(), img.cols, img.rows, p)
                       : frames->put_bgr(b, batch, img.ptr<uint8_t>(), img.cols, img.rows, static_cast<int64_t>(img.step[0]), p);
      ASSERT_TRUE(st) << st.error().message;
    }
    Status st = frames->infer_put(gpu_out);
    ASSERT_TRUE(st) << st.error().message;
    ASSERT_EQ(cpu_out.size(), gpu_out.size());
    std::vector<TensorView> cv_views, gv_views;
    for (auto& t : cpu_out) cv_views.push_back(t.view());
    for (auto& t : gpu_out) gv_views.push_back(t.view());
    for (int b = 0; b < batch; ++b) {
      Detections want, got;
      post.run(cv_views, b, want);
      post.run(gv_views, b, got);
      // The kernel's resize is at most one uint8 level from cv::resize's: a score may cross the
      // threshold's edge (margin 0.02), never a box move by more than a pixel.
      const DetectionParity parity = compare_detections(want, got, 0.25f, 0.02f, 1.0f);
      EXPECT_TRUE(parity.same()) << "round " << round << " image " << b << ": missing " << parity.missing << ", extra "
                                 << parity.extra << ", worst corner " << parity.max_corner_px << " px";
      EXPECT_LE(parity.max_corner_px, 1.0);
      compared += parity.matched;
    }
  }
  EXPECT_GT(compared, 10);
}

TEST(PreprocessOnGpu, BgrFramesFindWhatTheCpuLetterboxFinds) { expect_gpu_frames_match_cpu(test::kTinyModel, 1, false); }
TEST(PreprocessOnGpu, I420FramesFindWhatTheCpuLetterboxFinds) { expect_gpu_frames_match_cpu(test::kTinyModel, 1, true); }
TEST(PreprocessOnGpu, BatchOfFramesFindsWhatTheCpuLetterboxFinds) { expect_gpu_frames_match_cpu(test::kTinyDynamicModel, 3, false); }
#else
TEST(PreprocessOnGpu, NeedsTheCudaBuild) { GTEST_SKIP() << "built without the CUDA toolkit (STREAMDET_CUDA)"; }
#endif

}  // namespace
}  // namespace sd
