// The pipelined runtime, end to end with a fake engine: order, association of detections with
// their frames, batching, several sources, drop policies, Ctrl-C, failures, trace output.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include <nlohmann/json.hpp>
#include <opencv2/videoio.hpp>

#include "fake_engine.h"
#include "preprocess/letterbox.h"
#include "runtime/interrupt.h"
#include "runtime/pipeline.h"
#include "sources/source.h"
#include "test_util.h"

namespace sd {
namespace {

struct Line {
  std::string source;
  int64_t frame;
  std::vector<float> box;  // first detection's box, empty if none
};

std::vector<Line> read_jsonl(const std::string& path) {
  std::vector<Line> lines;
  std::istringstream in(test::read_file(path));
  std::string text;
  while (std::getline(in, text)) {
    auto j = nlohmann::json::parse(text);
    Line l{j["source"], j["frame"], {}};
    if (!j["detections"].empty()) l.box = j["detections"][0]["box"].get<std::vector<float>>();
    lines.push_back(l);
  }
  return lines;
}

// What the fake engine must have said about each frame of `video`, computed frame by frame.
std::vector<std::vector<float>> expected_boxes(const std::string& video, cv::Size net) {
  auto src = open_source(video);
  EXPECT_TRUE(src);
  std::vector<std::vector<float>> boxes;
  Frame f;
  PreprocessScratch scratch;
  PreprocessSpec spec = spec_for_layout(Layout::kYoloV8);
  std::vector<float> chw(3 * static_cast<size_t>(net.area()));
  while (true) {
    auto r = (*src)->read(f);
    if (!r || !*r) break;
    auto t = preprocess_frame(f.image, net, spec, chw.data(), scratch);
    double sum = 0;
    for (int i = 0; i < net.area(); ++i) sum += chw[static_cast<size_t>(i)];
    float cx, cy, w, h;
    test::fake_box_for_mean(sum / net.area(), cx, cy, w, h);
    Detection d{cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, 0.9f, 0};
    t.map_back(d);
    boxes.push_back({d.x1, d.y1, d.x2, d.y2});
  }
  return boxes;
}

RunOutcome run_with_timeout(const RunOptions& options, int seconds = 60) {
  auto fut = std::async(std::launch::async, [&] { return run_detection(options); });
  if (fut.wait_for(std::chrono::seconds(seconds)) != std::future_status::ready) {
    ADD_FAILURE() << "pipeline did not finish in " << seconds << " s (deadlock?)";
    std::abort();  // a hung test would otherwise hang the suite
  }
  return fut.get();
}

class PipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_interrupt();
    test::write_minimal_onnx(dir.file("fake.onnx"));
  }
  void TearDown() override { clear_interrupt(); }
  RunOptions base_options(const std::string& engine) {
    RunOptions o;
    o.model.model = dir.file("fake.onnx");
    o.model.engine = engine;
    o.quiet = true;
    return o;
  }
  test::TempDir dir;
};

TEST_F(PipelineTest, OrderAndAssociationKeptWithWorkersAndBatching) {
  test::FakeEngineConfig cfg;
  cfg.max_delay_ms = 6;  // workers finish out of order
  test::register_fake_engine("fake-order", cfg);
  test::write_numbered_avi(dir.file("a.avi"), 60);
  auto want = expected_boxes(dir.file("a.avi"), {160, 128});
  ASSERT_EQ(want.size(), 60u);

  RunOptions o = base_options("fake-order");
  o.sources = {dir.file("a.avi")};
  o.detections = dir.file("d.jsonl");
  o.output = dir.file("out.avi");
  o.workers = 3;
  o.batch = 2;
  o.batch_wait_ms = 3;
  RunOutcome out = run_with_timeout(o);
  ASSERT_TRUE(out.status) << out.status.error().message;
  EXPECT_EQ(out.profile.frames, 60);
  EXPECT_GE(cfg.max_batch_seen->load(), 2) << "micro-batching never formed a batch";

  auto lines = read_jsonl(dir.file("d.jsonl"));
  ASSERT_EQ(lines.size(), 60u);
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].frame, static_cast<int64_t>(i)) << "out of order at line " << i;
    ASSERT_EQ(lines[i].box.size(), 4u);
    for (int k = 0; k < 4; ++k) EXPECT_NEAR(lines[i].box[static_cast<size_t>(k)], want[i][static_cast<size_t>(k)], 0.06f) << "frame " << i;
  }
  cv::VideoCapture cap(dir.file("out.avi"));
  EXPECT_EQ(static_cast<int>(cap.get(cv::CAP_PROP_FRAME_COUNT)), 60);
}

TEST_F(PipelineTest, SeveralSourcesEachInOrderWithTheirOwnVideo) {
  test::register_fake_engine("fake-multi", {});
  test::write_numbered_avi(dir.file("a.avi"), 25);
  test::write_numbered_avi(dir.file("b.avi"), 40, 10, {200, 100});
  RunOptions o = base_options("fake-multi");
  o.sources = {dir.file("a.avi"), dir.file("b.avi")};
  o.detections = dir.file("d.jsonl");
  o.output = dir.file("out.avi");
  o.workers = 2;
  o.batch = 3;
  RunOutcome out = run_with_timeout(o);
  ASSERT_TRUE(out.status) << out.status.error().message;
  EXPECT_EQ(out.profile.frames, 65);
  ASSERT_EQ(out.profile.sources.size(), 2u);
  EXPECT_EQ(out.profile.sources[0].frames_done, 25);
  EXPECT_EQ(out.profile.sources[1].frames_done, 40);
  std::map<std::string, int64_t> next;
  for (const auto& l : read_jsonl(dir.file("d.jsonl"))) EXPECT_EQ(l.frame, next[l.source]++) << l.source;
  EXPECT_EQ(next[dir.file("a.avi")], 25);
  EXPECT_EQ(next[dir.file("b.avi")], 40);
  EXPECT_EQ(static_cast<int>(cv::VideoCapture(dir.file("out_0.avi")).get(cv::CAP_PROP_FRAME_COUNT)), 25);
  cv::VideoCapture b(dir.file("out_1.avi"));
  EXPECT_EQ(static_cast<int>(b.get(cv::CAP_PROP_FRAME_COUNT)), 40);
  EXPECT_EQ(static_cast<int>(b.get(cv::CAP_PROP_FRAME_WIDTH)), 200);
}

TEST_F(PipelineTest, EveryNthFrameDropsExactlyTheOthers) {
  test::register_fake_engine("fake-every", {});
  test::write_numbered_avi(dir.file("a.avi"), 31);
  RunOptions o = base_options("fake-every");
  o.sources = {dir.file("a.avi")};
  o.detections = dir.file("d.jsonl");
  o.every = 3;
  RunOutcome out = run_with_timeout(o);
  ASSERT_TRUE(out.status) << out.status.error().message;
  EXPECT_EQ(out.profile.frames, 11);  // frames 0, 3, ..., 30
  EXPECT_EQ(out.profile.drops[static_cast<size_t>(DropReason::kEvery)], 20);
  auto lines = read_jsonl(dir.file("d.jsonl"));
  ASSERT_EQ(lines.size(), 11u);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i].frame, static_cast<int64_t>(3 * i));
}

TEST_F(PipelineTest, FileSourcesAreLosslessEvenWithASlowEngine) {
  test::FakeEngineConfig cfg;
  cfg.fixed_delay_ms = 12;  // far slower than decoding 160x120 frames, even under ThreadSanitizer
  test::register_fake_engine("fake-slow", cfg);
  test::write_numbered_avi(dir.file("a.avi"), 30);
  RunOptions o = base_options("fake-slow");
  o.sources = {dir.file("a.avi")};
  RunOutcome out = run_with_timeout(o);
  ASSERT_TRUE(out.status);
  EXPECT_EQ(out.profile.frames, 30);
  for (auto d : out.profile.drops) EXPECT_EQ(d, 0);
  // The reader outran the engine: it spent time blocked on its full queue, and the verdict says so.
  EXPECT_GT(out.profile.stages[static_cast<size_t>(Stage::kRead)].blocked_ms +
                out.profile.stages[static_cast<size_t>(Stage::kPreprocess)].blocked_ms, 0.0);
  // The stage figures' verdict, whatever else ran on the machine meanwhile (the tests run in
  // parallel: the machine-wide rules, CPU-bound and CPU-starved, depend on it).
  ProfileReport stages_only = out.profile;
  stages_only.cpu_ms = 0;
  stages_only.machine_busy_ms = -1;
  stages_only.run_queue_ms = -1;
  const std::string verdict = bottleneck_verdict(stages_only);
  EXPECT_EQ(verdict.rfind("inference-bound: ", 0), 0u) << verdict;
  // The fake engine sleeps: its calls are off the CPU, and the verdict says the stage waits.
  EXPECT_NE(verdict.find("on the CPU only"), std::string::npos) << verdict;
}

TEST_F(PipelineTest, MaxAgeDropsStaleFramesAndCountsThem) {
  test::FakeEngineConfig cfg;
  cfg.fixed_delay_ms = 5;
  test::register_fake_engine("fake-age", cfg);
  test::write_numbered_avi(dir.file("a.avi"), 40);
  RunOptions o = base_options("fake-age");
  o.sources = {dir.file("a.avi")};
  o.max_age_ms = 0.001;  // every frame is older than this by the time a worker takes it
  RunOutcome out = run_with_timeout(o);
  ASSERT_TRUE(out.status);
  EXPECT_EQ(out.profile.frames, 0);
  EXPECT_EQ(out.profile.drops[static_cast<size_t>(DropReason::kMaxAge)], 40);
}

TEST_F(PipelineTest, InterruptDrainsAndFinalizesOutputs) {
  test::FakeEngineConfig cfg;
  cfg.fixed_delay_ms = 4;
  test::register_fake_engine("fake-int", cfg);
  test::write_numbered_avi(dir.file("a.avi"), 400);
  RunOptions o = base_options("fake-int");
  o.sources = {dir.file("a.avi")};
  o.detections = dir.file("d.jsonl");
  o.output = dir.file("out.mp4");
  o.workers = 2;
  std::thread interrupter([&] {
    while (cfg.calls->load() < 20) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    request_interrupt();
  });
  RunOutcome out = run_with_timeout(o);
  interrupter.join();
  ASSERT_FALSE(out.status);
  EXPECT_EQ(out.status.error().code, ErrorCode::kInterrupted);
  EXPECT_GT(out.profile.frames, 10);
  EXPECT_LT(out.profile.frames, 400);
  auto lines = read_jsonl(dir.file("d.jsonl"));  // every line complete and parseable
  EXPECT_EQ(static_cast<int64_t>(lines.size()), out.profile.frames);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i].frame, static_cast<int64_t>(i));
  cv::VideoCapture cap(dir.file("out.mp4"));  // the .mp4 was finalized (readable to the end)
  ASSERT_TRUE(cap.isOpened());
  int n = 0;
  cv::Mat f;
  while (cap.read(f)) ++n;
  EXPECT_EQ(n, out.profile.frames);
}

// The drain after a stop request is bounded by --drain-timeout: with an engine far slower than
// the timeout, the run ends at most one inference call after it (0.60 s measured; finishing the frames in
// flight took 3.6 s before there was a bound), the frames not done are dropped as aborted, and the
// outputs are whole.
TEST_F(PipelineTest, TheDrainAfterAnInterruptEndsAtTheDrainTimeout) {
  test::FakeEngineConfig cfg;
  cfg.fixed_delay_ms = 600;
  test::register_fake_engine("fake-drain", cfg);
  test::write_numbered_avi(dir.file("a.avi"), 100);
  RunOptions o = base_options("fake-drain");
  o.sources = {dir.file("a.avi")};
  o.detections = dir.file("d.jsonl");
  o.workers = 1;
  o.drain_timeout_ms = 100;
  std::atomic<int64_t> interrupted_at_ns{0};
  std::thread interrupter([&] {
    while (cfg.calls->load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    interrupted_at_ns = Clock::now().time_since_epoch().count();
    request_interrupt();
  });
  RunOutcome out = run_with_timeout(o);
  const auto stop_took = Clock::now() - Clock::time_point(Clock::duration(interrupted_at_ns.load()));
  interrupter.join();
  ASSERT_FALSE(out.status);
  EXPECT_EQ(out.status.error().code, ErrorCode::kInterrupted);
  EXPECT_NE(out.status.error().message.find("after --drain-timeout 0.1 s were dropped"), std::string::npos)
      << out.status.error().message;
  // 0.1 s, plus the call under way (0.6 s), plus a loaded machine's margin; unbounded: 3.6 s.
  EXPECT_LT(stop_took, std::chrono::milliseconds(2000)) << std::chrono::duration<double>(stop_took).count() << " s";
  EXPECT_GT(out.profile.drops[static_cast<size_t>(DropReason::kAborted)], 0);
  EXPECT_EQ(static_cast<int64_t>(read_jsonl(dir.file("d.jsonl")).size()), out.profile.frames);
}

TEST_F(PipelineTest, FailingEngineEndsTheRunWithItsErrorAndNoHang) {
  test::FakeEngineConfig cfg;
  cfg.fail_at_call = 7;  // the probe at load is call 0
  test::register_fake_engine("fake-fail", cfg);
  test::write_numbered_avi(dir.file("a.avi"), 200);
  RunOptions o = base_options("fake-fail");
  o.sources = {dir.file("a.avi"), dir.file("a.avi")};
  o.detections = dir.file("d.jsonl");
  o.workers = 2;
  RunOutcome out = run_with_timeout(o, 30);
  ASSERT_FALSE(out.status);
  EXPECT_NE(out.status.error().message.find("failed on purpose at call 7"), std::string::npos) << out.status.error().message;
  // What was finished before the failure is kept, in order.
  auto lines = read_jsonl(dir.file("d.jsonl"));
  EXPECT_LT(lines.size(), 400u);
}

TEST_F(PipelineTest, TraceIsValidJsonWithOneSpanPerStagePerFrame) {
  test::register_fake_engine("fake-trace", {});
  test::write_numbered_avi(dir.file("a.avi"), 12);
  RunOptions o = base_options("fake-trace");
  o.sources = {dir.file("a.avi")};
  o.output = dir.file("out.avi");
  o.trace = dir.file("trace.json");
  RunOutcome out = run_with_timeout(o);
  ASSERT_TRUE(out.status) << out.status.error().message;
  auto j = nlohmann::json::parse(test::read_file(dir.file("trace.json")));
  std::map<std::string, int> spans;
  std::set<int64_t> tids;
  std::set<int64_t> inference_frames;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M") continue;
    ASSERT_EQ(e["ph"], "X");
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    spans[e["name"]]++;
    tids.insert(e["tid"].get<int64_t>());
    if (e["name"] == "inference") inference_frames.insert(e["args"]["frame"].get<int64_t>());
  }
  for (const char* stage : {"read", "preprocess", "inference", "postprocess", "draw", "write"})
    EXPECT_EQ(spans[stage], 12) << stage;
  EXPECT_EQ(inference_frames.size(), 12u);
  EXPECT_GE(tids.size(), 4u);  // reader, preprocess, worker, sink: one track each
}

TEST_F(PipelineTest, UnwritableOutputFailsBeforeAnyFrame) {
  test::register_fake_engine("fake-out", {});
  test::write_numbered_avi(dir.file("a.avi"), 5);
  RunOptions o = base_options("fake-out");
  o.sources = {dir.file("a.avi")};
  o.output = "/nonexistent-dir/out.mp4";
  RunOutcome out = run_with_timeout(o);
  ASSERT_FALSE(out.status);
  EXPECT_FALSE(out.started);
  EXPECT_EQ(out.status.error().code, ErrorCode::kOutput);
}

}  // namespace
}  // namespace sd
