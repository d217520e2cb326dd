// The acknowledgement path: every frame a source delivers is settled exactly once, with what
// became of it (written, or dropped with the reason), and a frame that failed to write is never
// reported as written. A Redis source acknowledges entries from exactly these calls.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>

#include "fake_engine.h"
#include "runtime/interrupt.h"
#include "runtime/pipeline.h"
#include "test_util.h"

namespace sd {
namespace {

// What the pipeline told a source, shared with the test (the source itself dies with the run).
struct Settlements {
  std::mutex mutex;
  std::map<int64_t, std::vector<FrameOutcome>> by_frame;
  int64_t frames_read = 0;
  int closes = 0;

  int64_t count(FrameOutcome o) {
    std::lock_guard<std::mutex> lock(mutex);
    int64_t n = 0;
    for (auto& [i, v] : by_frame) n += std::count(v.begin(), v.end(), o);
    return n;
  }
  // Every frame read settled once, none twice, none that was not read.
  void expect_each_once() {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(static_cast<int64_t>(by_frame.size()), frames_read);
    for (auto& [i, v] : by_frame) EXPECT_EQ(v.size(), 1u) << "frame " << i << " settled " << v.size() << " times";
    EXPECT_EQ(closes, 1);
  }
};

// A video file source that records its settlements; optionally claims to be live, or stamps its
// frames as captured long ago (too old for any --max-age).
class RecordingSource final : public Source {
 public:
  RecordingSource(std::unique_ptr<Source> inner, std::shared_ptr<Settlements> log, bool live, bool stale)
      : inner_(std::move(inner)), log_(std::move(log)), info_(inner_->info()), stale_(stale) {
    info_.live = live;
  }
  const SourceInfo& info() const override { return info_; }
  Result<bool> read(Frame& frame) override {
    auto r = inner_->read(frame);
    if (r && *r) {
      std::lock_guard<std::mutex> lock(log_->mutex);
      ++log_->frames_read;
      frame.origin = "entry-" + std::to_string(frame.index);
      if (stale_) frame.capture_time = Clock::now() - std::chrono::seconds(60);
    }
    return r;
  }
  void settle(const Frame& frame, FrameOutcome outcome) override {
    EXPECT_EQ(frame.origin, "entry-" + std::to_string(frame.index)) << "the frame settled is not the one read";
    std::lock_guard<std::mutex> lock(log_->mutex);
    log_->by_frame[frame.index].push_back(outcome);
  }
  Status close() override {
    std::lock_guard<std::mutex> lock(log_->mutex);
    ++log_->closes;
    return ok();
  }

 private:
  std::unique_ptr<Source> inner_;
  std::shared_ptr<Settlements> log_;
  SourceInfo info_;
  bool stale_;
};

class FrameSettlement : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_interrupt();
    test::write_minimal_onnx(dir.file("fake.onnx"));
    test::write_numbered_avi(dir.file("a.avi"), frames);
  }
  void TearDown() override { clear_interrupt(); }

  RunOptions options(const std::string& engine) {
    RunOptions o;
    o.model.model = dir.file("fake.onnx");
    o.model.engine = engine;
    o.quiet = true;
    o.sources = {dir.file("a.avi")};
    o.detections = dir.file("d.jsonl");
    return o;
  }
  RunOutcome run(const RunOptions& o, bool live = false, bool stale = false) {
    SourceOpener open = [&](const std::string& spec, const SourceOptions& so) -> Result<std::unique_ptr<Source>> {
      SD_ASSIGN_OR_RETURN(auto inner, open_source(spec, so));
      return std::unique_ptr<Source>(std::make_unique<RecordingSource>(std::move(inner), log, live, stale));
    };
    auto fut = std::async(std::launch::async, [&] { return run_detection(o, open); });
    if (fut.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
      ADD_FAILURE() << "pipeline did not finish (deadlock?)";
      std::abort();
    }
    return fut.get();
  }

  const int frames = 30;
  test::TempDir dir;
  std::shared_ptr<Settlements> log = std::make_shared<Settlements>();
};

TEST_F(FrameSettlement, EveryFrameWrittenIsSettledOnceAsWritten) {
  test::register_fake_engine("settle-all", {});
  RunOptions o = options("settle-all");
  o.workers = 2;
  o.batch = 2;
  RunOutcome out = run(o);
  ASSERT_TRUE(out.status) << out.status.error().message;
  log->expect_each_once();
  EXPECT_EQ(log->frames_read, frames);
  EXPECT_EQ(log->count(FrameOutcome::kWritten), frames);
}

TEST_F(FrameSettlement, FramesSkippedByEveryAreSettledAsEvery) {
  test::register_fake_engine("settle-every", {});
  RunOptions o = options("settle-every");
  o.every = 3;
  RunOutcome out = run(o);
  ASSERT_TRUE(out.status) << out.status.error().message;
  log->expect_each_once();
  EXPECT_EQ(log->count(FrameOutcome::kWritten), frames / 3);
  EXPECT_EQ(log->count(FrameOutcome::kEvery), frames - frames / 3);
  std::lock_guard<std::mutex> lock(log->mutex);
  for (auto& [i, v] : log->by_frame)
    EXPECT_EQ(v[0], i % 3 == 0 ? FrameOutcome::kWritten : FrameOutcome::kEvery) << "frame " << i;
}

TEST_F(FrameSettlement, FramesTooOldAreSettledAsMaxAge) {
  test::register_fake_engine("settle-age", {});
  RunOptions o = options("settle-age");
  o.max_age_ms = 1000;
  RunOutcome out = run(o, /*live=*/false, /*stale=*/true);
  ASSERT_TRUE(out.status) << out.status.error().message;
  log->expect_each_once();
  EXPECT_EQ(log->count(FrameOutcome::kMaxAge), frames);
  EXPECT_EQ(test::count_lines(dir.file("d.jsonl")), 0u);
}

TEST_F(FrameSettlement, FramesReplacedUnderTheLatestPolicyAreSettledAsPolicy) {
  test::FakeEngineConfig cfg;
  cfg.fixed_delay_ms = 15;  // slower than the file is read: the latest policy must replace frames
  test::register_fake_engine("settle-latest", cfg);
  RunOptions o = options("settle-latest");
  o.policy = FramePolicy::kLatest;
  RunOutcome out = run(o, /*live=*/true);
  ASSERT_TRUE(out.status) << out.status.error().message;
  log->expect_each_once();
  const int64_t written = log->count(FrameOutcome::kWritten), replaced = log->count(FrameOutcome::kPolicy);
  EXPECT_EQ(written + replaced, frames);
  EXPECT_EQ(static_cast<int64_t>(test::count_lines(dir.file("d.jsonl"))), written);
  EXPECT_EQ(out.profile.drops[static_cast<size_t>(DropReason::kPolicy)], replaced);
}

TEST_F(FrameSettlement, AnEngineFailureLeavesTheRestAbortedNotWritten) {
  test::FakeEngineConfig cfg;
  cfg.fail_at_call = 10;
  test::register_fake_engine("settle-fail", cfg);
  RunOptions o = options("settle-fail");
  RunOutcome out = run(o);
  ASSERT_FALSE(out.status);
  log->expect_each_once();
  const int64_t written = log->count(FrameOutcome::kWritten);
  EXPECT_EQ(static_cast<int64_t>(test::count_lines(dir.file("d.jsonl"))), written);
  EXPECT_LE(written, 10);
  EXPECT_EQ(written + log->count(FrameOutcome::kAborted), log->frames_read);
}

TEST_F(FrameSettlement, AFrameThatFailsToWriteIsNeverSettledAsWritten) {
  test::register_fake_engine("settle-full", {});
  RunOptions o = options("settle-full");
  o.detections = "/dev/full";  // every write fails: no space left on device
  RunOutcome out = run(o);
  ASSERT_FALSE(out.status);
  EXPECT_EQ(out.status.error().code, ErrorCode::kOutput);
  log->expect_each_once();
  EXPECT_EQ(log->count(FrameOutcome::kWritten), 0);
  EXPECT_EQ(log->count(FrameOutcome::kFailed), 1);
  EXPECT_EQ(log->count(FrameOutcome::kFailed) + log->count(FrameOutcome::kAborted), log->frames_read);
}

TEST_F(FrameSettlement, CtrlCSettlesWhatWasInFlight) {
  test::FakeEngineConfig cfg;
  cfg.fixed_delay_ms = 5;
  test::register_fake_engine("settle-int", cfg);
  RunOptions o = options("settle-int");
  auto calls = cfg.calls;
  std::thread stopper([&] {
    while (calls->load() < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    request_interrupt();
  });
  RunOutcome out = run(o);
  stopper.join();
  ASSERT_FALSE(out.status);
  EXPECT_EQ(out.status.error().code, ErrorCode::kInterrupted);
  log->expect_each_once();
  EXPECT_EQ(static_cast<int64_t>(test::count_lines(dir.file("d.jsonl"))), log->count(FrameOutcome::kWritten));
}

}  // namespace
}  // namespace sd
