// NVDEC's frames kept on the GPU through the pipeline (docs/gpu.md, "NVDEC"), on the host: a
// fake NVDEC source hands frames over in fake "device" memory (tests/fake_device_frames.h, a
// small bounded pool) once the run letterboxes on the GPU, and the fake engine's contexts take
// them as the CUDA context would (put_nv12_device, letterboxed by the kernels' reference). A run
// whose outputs need no pixels downloads nothing; an annotated video downloads each frame exactly
// once; frames keep their order and PTS; where the preprocess runs on the CPU, or the engine is
// not on a GPU, or the GPU letterbox fails under auto, frames come down as before and the profile
// says why.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>

#include "fake_device_frames.h"
#include "fake_engine.h"
#include "runtime/interrupt.h"
#include "runtime/pipeline.h"
#include "runtime/preprocess_on.h"
#include "synthetic/scene.h"
#include "test_util.h"

namespace sd {
namespace {

constexpr int kFrames = 12;
constexpr int kWidth = 320, kHeight = 192;
constexpr int kPoolFrames = 4;  // fewer than the pipeline's packets: the reader waits on the pool

// PTS in the stream's time base (1/1000 s here), 100 ms apart, not starting at 0.
int64_t pts_of(int index) { return 5000 + int64_t{index} * 100; }

// An NVDEC source without NVDEC: the synthetic scene's frames as NV12 in a fake device pool, handed
// over as device frames after keep_frames_on_device(0), else downloaded to I420 as the real
// source does.
class FakeNvdecSource final : public Source {
 public:
  explicit FakeNvdecSource(std::shared_ptr<test::FakeDeviceCounts> counts)
      : pool_(DeviceFramePool::create(std::make_unique<test::FakeDeviceMemory>(std::move(counts)), kWidth, kHeight, kPoolFrames)) {
    synth::SceneOptions so;
    so.width = kWidth, so.height = kHeight, so.seed = 4242, so.num_objects = 4;
    scene_ = std::make_unique<synth::SyntheticScene>(so);
    info_.uri = "fake-nvdec.mp4";
    info_.kind = SourceKind::kVideoFile;
    info_.fps = 10;
    info_.width = kWidth, info_.height = kHeight;
    info_.frame_count = kFrames;
    info_.decoder = "nvdec (fake H.264 on cuda:0)";
  }
  const SourceInfo& info() const override { return info_; }
  bool keep_frames_on_device(int cuda_device, std::string& why_not) override {
    if (cuda_device != 0) {
      why_not = "not the decoder's GPU";
      return false;
    }
    on_device_ = true;
    return true;
  }
  Result<bool> read(Frame& frame) override {
    if (next_ >= kFrames) return false;
    cv::Mat bgr, i420;
    std::vector<synth::TruthBox> truth;
    scene_->render(next_, bgr, truth);
    cv::cvtColor(bgr, i420, cv::COLOR_BGR2YUV_I420);
    SD_ASSIGN_OR_RETURN(DeviceFrameRef ref, test::upload_i420(*pool_, i420, kWidth, kHeight, pts_of(next_)));
    if (on_device_) {
      frame.device = std::move(ref);
      frame.format = PixelFormat::kDeviceNv12;
    } else {  // as NvdecPacketDecoder::receive without keep_on_device: downloaded here
      frame.device.reset();
      std::vector<uint8_t> nv12(static_cast<size_t>(kWidth) * kHeight * 3 / 2);
      SD_TRY(ref.download_nv12(nv12.data(), kWidth));
      nv12_to_i420(nv12.data(), kWidth, kWidth, kHeight, frame.yuv);
      frame.format = PixelFormat::kI420;
    }
    const int64_t pts = on_device_ ? frame.device.pts() : pts_of(next_);
    frame.index = next_++;
    frame.timestamp_ms = static_cast<double>(pts);  // the time base is 1 ms
    frame.capture_time = Clock::now();
    return true;
  }

 private:
  std::shared_ptr<DeviceFramePool> pool_;
  std::unique_ptr<synth::SyntheticScene> scene_;
  SourceInfo info_;
  int next_ = 0;
  bool on_device_ = false;
};

class NvdecDeviceFrames : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_interrupt();
    test::write_minimal_onnx(dir.file("fake.onnx"));
  }
  RunOptions options(const std::string& engine, const std::string& place, const std::string& out) {
    RunOptions o;
    o.model.model = dir.file("fake.onnx");
    o.model.engine = engine;
    o.model.preprocess_on = place;
    o.quiet = true;
    o.sources = {"fake-nvdec.mp4"};
    o.detections = dir.file(out);
    o.track = TrackMode::kOff;
    o.batch = 3;
    o.workers = 2;
    return o;
  }
  RunOutcome run(const RunOptions& o) {
    return run_detection(o, [this](const std::string&, const SourceOptions&) -> Result<std::unique_ptr<Source>> {
      return std::unique_ptr<Source>(std::make_unique<FakeNvdecSource>(counts));
    });
  }
  struct Line {
    int64_t frame = 0;
    double timestamp_ms = 0;
    std::vector<float> boxes;
  };
  std::vector<Line> lines(const std::string& out) {
    std::vector<Line> all;
    std::ifstream in(dir.file(out));
    for (std::string text; std::getline(in, text);) {
      const nlohmann::json j = nlohmann::json::parse(text);
      Line l{j.at("frame").get<int64_t>(), j.at("timestamp_ms").get<double>(), {}};
      for (const auto& d : j.at("detections"))
        for (const auto& v : d.at("box")) l.boxes.push_back(v.get<float>());
      all.push_back(l);
    }
    return all;
  }
  // Every frame in order with its PTS, and the same boxes as the reference run (within 1 px: the
  // kernels' reference letterbox against the CPU's).
  void expect_same_frames(const std::string& reference, const std::string& out) {
    const auto want = lines(reference), got = lines(out);
    ASSERT_EQ(got.size(), static_cast<size_t>(kFrames));
    ASSERT_EQ(want.size(), got.size());
    for (size_t f = 0; f < got.size(); ++f) {
      EXPECT_EQ(got[f].frame, static_cast<int64_t>(f));
      EXPECT_DOUBLE_EQ(got[f].timestamp_ms, static_cast<double>(pts_of(static_cast<int>(f))));
      ASSERT_EQ(want[f].boxes.size(), got[f].boxes.size()) << "frame " << f;
      for (size_t i = 0; i < got[f].boxes.size(); ++i) EXPECT_NEAR(want[f].boxes[i], got[f].boxes[i], 1.0) << "frame " << f;
    }
  }
  static std::string frame_path(const RunOutcome& r) { return r.profile.sources.empty() ? "?" : r.profile.sources[0].frame_path; }

  test::TempDir dir;
  std::shared_ptr<test::FakeDeviceCounts> counts = std::make_shared<test::FakeDeviceCounts>();
};

TEST_F(NvdecDeviceFrames, GoToTheGpuLetterboxAndAreNeverDownloadedWithoutAPixelOutput) {
  test::FakeEngineConfig cfg;
  cfg.gpu_frames = true;
  test::register_fake_engine("nvdec-gpu-frames", cfg);
  RunOutcome c = run(options("nvdec-gpu-frames", "cpu", "cpu.jsonl"));
  ASSERT_TRUE(c.status) << c.status.error().message;
  EXPECT_EQ(counts->downloads.load(), kFrames) << "the CPU's letterbox: each frame downloaded by the source, as before";
  EXPECT_EQ(frame_path(c), "nvdec -> downloaded to the host: the preprocess runs on the CPU");

  counts = std::make_shared<test::FakeDeviceCounts>();
  RunOutcome g = run(options("nvdec-gpu-frames", "auto", "gpu.jsonl"));
  ASSERT_TRUE(g.status) << g.status.error().message;
  EXPECT_EQ(cfg.device_frames_put->load(), kFrames) << "every frame letterboxed from the device";
  EXPECT_EQ(counts->downloads.load(), 0) << "detections only: no frame comes to the host";
  EXPECT_LE(counts->allocations.load(), kPoolFrames) << "the pool's bound, whatever the pipeline holds";
  EXPECT_EQ(counts->frees.load(), counts->allocations.load()) << "every buffer back and freed after the run";
  EXPECT_EQ(frame_path(g), "nvdec -> gpu preprocess (no host copy)");
  expect_same_frames("cpu.jsonl", "gpu.jsonl");
}

TEST_F(NvdecDeviceFrames, AnAnnotatedVideoDownloadsEachFrameOnce) {
  test::FakeEngineConfig cfg;
  cfg.gpu_frames = true;
  test::register_fake_engine("nvdec-gpu-frames-video", cfg);
  RunOptions cpu = options("nvdec-gpu-frames-video", "cpu", "cpu.jsonl");
  RunOutcome c = run(cpu);
  ASSERT_TRUE(c.status) << c.status.error().message;
  counts = std::make_shared<test::FakeDeviceCounts>();
  RunOptions o = options("nvdec-gpu-frames-video", "gpu", "gpu.jsonl");
  o.output = dir.file("annotated.avi");
  RunOutcome g = run(o);
  ASSERT_TRUE(g.status) << g.status.error().message;
  EXPECT_EQ(cfg.device_frames_put->load(), kFrames);
  EXPECT_EQ(counts->downloads.load(), kFrames) << "drawn on: each frame downloaded, once";
  EXPECT_EQ(g.profile.sources[0].frames_done, kFrames);
  EXPECT_GT(std::filesystem::file_size(dir.file("annotated.avi")), 0u);
  expect_same_frames("cpu.jsonl", "gpu.jsonl");
}

TEST_F(NvdecDeviceFrames, AreDownloadedAsBeforeWhereTheModelIsNotOnAGpu) {
  test::FakeEngineConfig cfg;  // a CPU engine
  test::register_fake_engine("nvdec-cpu-engine", cfg);
  RunOutcome r = run(options("nvdec-cpu-engine", "auto", "cpu.jsonl"));
  ASSERT_TRUE(r.status) << r.status.error().message;
  EXPECT_EQ(counts->downloads.load(), kFrames);
  EXPECT_EQ(frame_path(r), "nvdec -> downloaded to the host: the model runs on cpu");
  EXPECT_EQ(lines("cpu.jsonl").size(), static_cast<size_t>(kFrames));
}

TEST_F(NvdecDeviceFrames, AFailingGpuLetterboxUnderAutoDownloadsTheFramesForTheCpu) {
  test::FakeEngineConfig cfg;
  cfg.gpu_frames = true;
  test::register_fake_engine("nvdec-gpu-ok", cfg);
  RunOutcome c = run(options("nvdec-gpu-ok", "cpu", "cpu.jsonl"));
  ASSERT_TRUE(c.status) << c.status.error().message;
  test::FakeEngineConfig failing;
  failing.gpu_frames = true;
  failing.gpu_frames_fail = true;
  test::register_fake_engine("nvdec-gpu-fail", failing);
  counts = std::make_shared<test::FakeDeviceCounts>();
  RunOutcome a = run(options("nvdec-gpu-fail", "auto", "auto.jsonl"));
  ASSERT_TRUE(a.status) << a.status.error().message;
  EXPECT_EQ(frame_path(a), "nvdec -> gpu preprocess (no host copy)");
  EXPECT_EQ(counts->downloads.load(), kFrames) << "the CPU's letterbox after the failure: each frame down once";
  expect_same_frames("cpu.jsonl", "auto.jsonl");
}

// The choice alone: a source NVDEC does not decode has no path; one NVDEC decodes on another GPU
// than the model's is downloaded, and says why.
TEST(NvdecFramePath, NamesWhereEachSourcesFramesGo) {
  auto counts = std::make_shared<test::FakeDeviceCounts>();
  FakeNvdecSource nvdec(counts);
  const PreprocessPlace gpu{true, "cuda:1 (test)"}, cpu{false, "cpu"};
  SourceInfo other = nvdec.info();
  other.decoder = "cpu (h264, 2 threads)";
  EXPECT_EQ(nvdec_frame_path(gpu, "cuda:1", other, nvdec), "");
  EXPECT_EQ(nvdec_frame_path(gpu, "cuda:1", nvdec.info(), nvdec), "nvdec -> downloaded to the host: not the decoder's GPU");
  EXPECT_EQ(nvdec_frame_path(cpu, "cuda:0", nvdec.info(), nvdec), "nvdec -> downloaded to the host: the preprocess runs on the CPU");
  EXPECT_EQ(nvdec_frame_path(gpu, "cuda:0", nvdec.info(), nvdec), "nvdec -> gpu preprocess (no host copy)");
}

}  // namespace
}  // namespace sd
