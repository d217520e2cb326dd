// Live sources (a synthetic camera on a clock, faster than inference) through the pipeline: each
// frame policy drops exactly what it says and counts it; a frame is either done or dropped with
// a reason, never lost silently.
#include <gtest/gtest.h>

#include <future>

#include "fake_engine.h"
#include "runtime/interrupt.h"
#include "runtime/pipeline.h"
#include "sources/source.h"
#include "sources/synthetic_source.h"
#include "test_util.h"

namespace sd {
namespace {

int64_t drops(const ProfileReport& p, DropReason r) { return p.drops[static_cast<size_t>(r)]; }

class LivePipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_interrupt();
    test::write_minimal_onnx(dir.file("fake.onnx"));
    cfg.fixed_delay_ms = 15;  // the "model": ~66 inferences/s against a 200 fps camera
  }
  RunOutcome run(const std::string& engine, FramePolicy policy, int every = 1) {
    test::register_fake_engine(engine, cfg);
    RunOptions o;
    o.model.model = dir.file("fake.onnx");
    o.model.engine = engine;
    o.quiet = true;
    o.sources = {"synth:w=160,h=96,fps=200,frames=160,live=1"};
    o.detections = dir.file("d.jsonl");
    o.policy = policy;
    o.every = every;
    auto fut = std::async(std::launch::async, [&] { return run_detection(o); });
    if (fut.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      ADD_FAILURE() << "pipeline did not finish (deadlock?)";
      std::abort();
    }
    return fut.get();
  }
  // Every frame the reader got is accounted for: done, or dropped for a reason.
  void expect_accounted(const ProfileReport& p) {
    ASSERT_EQ(p.sources.size(), 1u);
    const SourceReport& s = p.sources[0];
    int64_t dropped = 0;
    for (auto d : s.drops) dropped += d;
    EXPECT_EQ(s.frames_read, s.frames_done + dropped);
    EXPECT_EQ(p.frames, s.frames_done);
    EXPECT_EQ(static_cast<int64_t>(test::count_lines(dir.file("d.jsonl"))), s.frames_done);
  }
  test::TempDir dir;
  test::FakeEngineConfig cfg;
};

TEST_F(LivePipelineTest, LatestDropsStaleFramesAndCountsEveryOne) {
  RunOutcome out = run("fake-live-latest", FramePolicy::kLatest);
  ASSERT_TRUE(out.status) << out.status.error().message;
  expect_accounted(out.profile);
  // The camera is about 3x faster than the engine: most frames must go, for the policy.
  EXPECT_GT(drops(out.profile, DropReason::kPolicy), out.profile.frames);
  EXPECT_EQ(drops(out.profile, DropReason::kMaxAge), 0);
}

TEST_F(LivePipelineTest, AutoPolicyIsLatestForALiveSource) {
  RunOutcome out = run("fake-live-auto", FramePolicy::kAuto);
  ASSERT_TRUE(out.status) << out.status.error().message;
  expect_accounted(out.profile);
  EXPECT_GT(drops(out.profile, DropReason::kPolicy), 0);
}

TEST_F(LivePipelineTest, DropOldestDropsAndCounts) {
  RunOutcome out = run("fake-live-oldest", FramePolicy::kDropOldest);
  ASSERT_TRUE(out.status) << out.status.error().message;
  expect_accounted(out.profile);
  EXPECT_GT(drops(out.profile, DropReason::kPolicy), 0);
}

TEST_F(LivePipelineTest, BlockNeverDropsWhatWasRead) {
  RunOutcome out = run("fake-live-block", FramePolicy::kBlock);
  ASSERT_TRUE(out.status) << out.status.error().message;
  expect_accounted(out.profile);
  for (auto d : out.profile.drops) EXPECT_EQ(d, 0);
  // The camera went on without us: it delivered fewer frames than it made (gaps in the indices).
  EXPECT_LT(out.profile.sources[0].frames_read, 160);
}

TEST_F(LivePipelineTest, EveryNthCountsTheSkippedOnesApart) {
  RunOutcome out = run("fake-live-every", FramePolicy::kLatest, 2);
  ASSERT_TRUE(out.status) << out.status.error().message;
  expect_accounted(out.profile);
  const SourceReport& s = out.profile.sources[0];
  // Every other frame read is skipped by --every before it reaches the policy.
  EXPECT_EQ(drops(out.profile, DropReason::kEvery), s.frames_read / 2);
}

TEST(SyntheticSource, ParsesItsSpecAndRejectsBadOnes) {
  auto spec = parse_synthetic_spec("synth:w=640,h=360,frames=10,fps=25,seed=3,objects=2,live=1");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->scene.width, 640);
  EXPECT_EQ(spec->scene.height, 360);
  EXPECT_EQ(spec->scene.frames, 10);
  EXPECT_EQ(spec->scene.seed, 3u);
  EXPECT_TRUE(spec->live);
  for (const char* bad : {"synth:w=x", "synth:depth=3", "synth:w=5", "synth:fps=0", "synth:frames"}) {
    auto r = parse_synthetic_spec(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kUsage);
    EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
  }
}

TEST(SyntheticSource, FileModeIsLosslessAndLiveModeFollowsTheClock) {
  auto file = open_source("synth:w=64,h=48,frames=5");
  ASSERT_TRUE(file);
  EXPECT_FALSE((*file)->info().live);
  EXPECT_EQ((*file)->info().frame_count, 5);
  Frame f;
  for (int i = 0; i < 5; ++i) {
    auto r = (*file)->read(f);
    ASSERT_TRUE(r && *r);
    EXPECT_EQ(f.index, i);
    EXPECT_EQ(f.image.cols, 64);
  }
  EXPECT_FALSE(*(*file)->read(f));

  auto live = open_source("synth:w=64,h=48,fps=100,frames=0,live=1");
  ASSERT_TRUE(live);
  EXPECT_TRUE((*live)->info().live);
  ASSERT_TRUE(*(*live)->read(f));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // ~10 frame periods go by unread
  ASSERT_TRUE(*(*live)->read(f));
  EXPECT_GE(f.index, 5);  // the frames made meanwhile are gone, as with a camera
}

}  // namespace
}  // namespace sd
