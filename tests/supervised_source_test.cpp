// The supervisor of live sources (sources/supervised_source.h) with a scripted fake source: what
// it does on a stall, an error, an early end, reopen failures (back-off growing to its cap, giving
// up after --reconnect-for), and that a stop request ends a read within a second in every state.
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "runtime/source_health.h"
#include "sources/source.h"
#include "sources/supervised_source.h"
#include "test_util.h"

namespace sd {
namespace {

using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

enum class Step {
  kFrame,    // a frame
  kCorrupt,  // a frame the decoder could not make
  kEnd,      // the stream ends
  kError,    // the stream breaks
  kStall,    // no frame: the read gives up after the stall timeout (or at a stop request)
};

// What each opening of the fake source does, shared by every opening (the first and reopens).
struct Script {
  std::mutex mutex;
  std::deque<std::vector<Step>> opens;  // one per successful opening; none left: reopening fails
  std::vector<Clock::time_point> reopen_times;
  ms stall_timeout{100};
  double fps = 25;
  bool pace = false;          // a frame every millisecond (else as fast as they are read)
  bool block_reopen = false;  // a reopen that hangs until the stop request (a host that does not answer)
  std::function<bool()> should_stop;
};

// A source that plays one opening's steps, then stalls.
class FakeLive final : public Source {
 public:
  FakeLive(Script& script, std::vector<Step> steps) : script_(script), steps_(std::move(steps)) {
    info_.uri = "rtsp://fake/cam";
    info_.kind = SourceKind::kStream;
    info_.fps = script.fps;
    info_.width = 8;
    info_.height = 8;
    info_.live = true;
  }
  const SourceInfo& info() const override { return info_; }
  Result<bool> read(Frame& frame) override {
    const Step step = next_ < steps_.size() ? steps_[next_++] : Step::kStall;
    frame.set_bgr();
    switch (step) {
      case Step::kFrame:
        if (script_.pace) std::this_thread::sleep_for(1ms);
        frame.image = cv::Mat(8, 8, CV_8UC3, cv::Scalar(1, 2, 3));
        frame.index = index_++;
        frame.capture_time = Clock::now();
        frame.timestamp_ms = static_cast<double>(frame.index);  // this opening's own clock: from 0 again
        return true;
      case Step::kCorrupt:
        frame.index = index_++;
        return fail(ErrorCode::kCorruptFrame, "frame could not be decoded");
      case Step::kEnd: return false;
      case Step::kError: return fail(ErrorCode::kSource, "connection reset by peer");
      case Step::kStall: break;
    }
    // As a real live source does: wait in slices, give up at the stall timeout, end at a stop.
    const auto until = Clock::now() + script_.stall_timeout;
    while (Clock::now() < until) {
      if (script_.should_stop && script_.should_stop()) return false;
      std::this_thread::sleep_for(5ms);
    }
    return fail(ErrorCode::kSource, "rtsp://fake/cam delivered no frame for 0.1 s");
  }

 private:
  Script& script_;
  std::vector<Step> steps_;
  size_t next_ = 0;
  int64_t index_ = 0;
  SourceInfo info_;
};

Result<std::unique_ptr<Source>> open_fake(Script& script) {
  std::vector<Step> steps;
  {
    std::lock_guard lock(script.mutex);
    script.reopen_times.push_back(Clock::now());
    if (script.opens.empty()) {
      if (!script.block_reopen) return fail(ErrorCode::kSource, "cannot open stream rtsp://fake/cam: Connection refused");
    } else {
      steps = std::move(script.opens.front());
      script.opens.pop_front();
    }
  }
  if (steps.empty() && script.block_reopen) {
    while (!script.should_stop()) std::this_thread::sleep_for(5ms);
    return fail(ErrorCode::kSource, "cannot open stream rtsp://fake/cam: interrupted");
  }
  return std::unique_ptr<Source>(new FakeLive(script, std::move(steps)));
}

class SupervisedSourceTest : public ::testing::Test {
 protected:
  // The supervisor over the script; the first opening is the script's first.
  std::unique_ptr<Source> make(SupervisorOptions o = {}) {
    script.should_stop = [this] { return stop.load(); };
    o.stall_timeout = script.stall_timeout;
    if (o.backoff_initial == SupervisorOptions{}.backoff_initial) o.backoff_initial = 10ms;
    o.seed = 7;
    SourceOptions so;
    so.health = &health;
    so.should_stop = script.should_stop;
    auto first = open_fake(script);
    EXPECT_TRUE(first);
    script.reopen_times.clear();
    return std::make_unique<SupervisedSource>(std::move(*first), [this] { return open_fake(script); }, o, so);
  }
  // Reads until the end or an error; the indices of the frames delivered.
  std::vector<int64_t> read_all(Source& s, Result<bool>* last = nullptr) {
    std::vector<int64_t> indices;
    Frame f;
    double last_timestamp = -1;
    while (true) {
      Result<bool> r = s.read(f);
      if (r && *r) {
        health.frame_arrived();  // what the reader does
        indices.push_back(f.index);
        EXPECT_GE(f.timestamp_ms, last_timestamp) << "timestamps go on across reconnects, frame " << f.index;
        last_timestamp = f.timestamp_ms;
        continue;
      }
      if (!r && r.error().code == ErrorCode::kCorruptFrame) {
        indices.push_back(-1 - f.index);  // marked: a corrupt frame's index, negative
        continue;
      }
      if (last) *last = r;
      return indices;
    }
  }
  Script script;
  SourceHealth health{"rtsp://fake/cam"};
  std::atomic<bool> stop{false};
};

TEST(JitteredDelay, DoublesToTheCapAndJitterOnlyShortens) {
  transport::Backoff b(ms(50), ms(400));
  std::mt19937 rng(1);
  std::vector<int64_t> plain;
  for (int i = 0; i < 6; ++i) plain.push_back(jittered_delay(b, 0, rng).count());
  EXPECT_EQ(plain, (std::vector<int64_t>{50, 100, 200, 400, 400, 400}));
  b.reset();
  for (int64_t expected : {50, 100, 200, 400, 400, 400}) {
    const int64_t d = jittered_delay(b, 0.25, rng).count();
    EXPECT_LE(d, expected);
    EXPECT_GE(d, expected * 3 / 4);
  }
}

TEST_F(SupervisedSourceTest, AnEarlyEndIsReconnectedAndIndicesKeepCounting) {
  script.opens = {{Step::kFrame, Step::kFrame, Step::kFrame, Step::kEnd}, {Step::kFrame, Step::kFrame, Step::kError},
                  {Step::kFrame, Step::kEnd}};
  SupervisorOptions o;
  o.reconnect_for = 300ms;  // after the last opening: reopening fails until it gives up
  auto s = make(o);
  Result<bool> last;
  EXPECT_EQ(read_all(*s, &last), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  ASSERT_FALSE(last);
  EXPECT_EQ(last.error().code, ErrorCode::kSource);
  EXPECT_NE(last.error().message.find("--reconnect-for"), std::string::npos) << last.error().message;
  EXPECT_NE(last.error().message.find("the stream ended"), std::string::npos) << last.error().message;
  const SourceHealthSnapshot h = health.snapshot();
  EXPECT_EQ(h.reconnects, 2);
  EXPECT_EQ(h.outages, 3);
  EXPECT_EQ(h.state, SourceState::kBackoff);  // the reader marks it failed when it gets the error
}

TEST_F(SupervisedSourceTest, ACorruptFramePassesThroughWithItsIndex) {
  script.opens = {{Step::kFrame, Step::kEnd}, {Step::kFrame, Step::kCorrupt, Step::kFrame, Step::kEnd}};
  SupervisorOptions o;
  o.reconnect_for = 200ms;
  auto s = make(o);
  EXPECT_EQ(read_all(*s), (std::vector<int64_t>{0, 1, -1 - 2, 3}));
  EXPECT_EQ(health.snapshot().reconnects, 1);
}

TEST_F(SupervisedSourceTest, AStallIsAnOutageAndFramesLostAreEstimated) {
  script.stall_timeout = 200ms;
  script.fps = 50;
  script.opens = {{Step::kFrame, Step::kStall}, {Step::kFrame}};
  auto s = make();
  Frame f;
  ASSERT_TRUE(s->read(f).value());
  EXPECT_EQ(f.index, 0);
  health.frame_arrived();
  ASSERT_TRUE(s->read(f).value());  // after the stall and the reconnect
  EXPECT_EQ(f.index, 1);
  // The read waited for the source, it did not work: the profile counts the wait as such.
  EXPECT_GE(s->last_read_idle_ms(), 190);
  const SourceHealthSnapshot h = health.snapshot();
  EXPECT_EQ(h.state, SourceState::kConnecting);  // reopened; live again when the reader marks the frame
  EXPECT_EQ(h.outages, 1);
  EXPECT_EQ(h.reconnects, 1);
  EXPECT_NE(h.last_error.find("no frame"), std::string::npos) << h.last_error;
  // At least the stall timeout passed without frames at 50 fps: 10 frames less one interval.
  EXPECT_GE(h.frames_lost_to_outages, 9);
  EXPECT_LE(h.frames_lost_to_outages, 500);  // not the whole run's worth (generous: a slow machine)
}

TEST_F(SupervisedSourceTest, ReopenFailuresBackOffGrowingToTheCap) {
  // The first opening ends at once; the next five reopen attempts fail, the sixth works.
  script.opens = {{Step::kFrame, Step::kEnd}};
  SupervisorOptions o;
  o.backoff_initial = 20ms;
  o.backoff_cap = 80ms;
  o.jitter = 0;
  auto s = make(o);
  Frame f;
  ASSERT_TRUE(s->read(f).value());
  std::thread later([&] {
    // Not before the fifth attempt: then the sixth opens.
    while (true) {
      {
        std::lock_guard lock(script.mutex);
        if (script.reopen_times.size() >= 5) {
          script.opens.push_back({Step::kFrame, Step::kFrame});
          break;
        }
      }
      std::this_thread::sleep_for(1ms);
    }
  });
  auto r = s->read(f);
  later.join();
  ASSERT_TRUE(r && *r);
  EXPECT_EQ(f.index, 1);
  std::lock_guard lock(script.mutex);
  ASSERT_GE(script.reopen_times.size(), 6u);
  // Each wait at least what the back-off said (a wait may be longer, never shorter): 20, 40, 80, 80...
  const int64_t floor_ms[] = {40, 80, 80, 80};
  for (size_t i = 1; i < 5; ++i) {
    const auto gap = std::chrono::duration_cast<ms>(script.reopen_times[i] - script.reopen_times[i - 1]).count();
    EXPECT_GE(gap, floor_ms[i - 1] - 1) << "between attempts " << i << " and " << i + 1;
  }
  const SourceHealthSnapshot h = health.snapshot();
  EXPECT_EQ(h.outages, 1);  // one outage, however many attempts
  EXPECT_EQ(h.reconnects, 1);
  // The latest reason: the last failed attempt's.
  EXPECT_NE(h.last_error.find("Connection refused"), std::string::npos) << h.last_error;
}

// A source that opens and ends at once, again and again, stays down: the back-off grows, and
// --reconnect-for counts from the first end, however many times it opened.
TEST_F(SupervisedSourceTest, ASourceThatOpensAndDropsAtOnceStaysDown) {
  script.opens = {{Step::kFrame, Step::kEnd}, {Step::kEnd}, {Step::kEnd}, {Step::kEnd}};
  SupervisorOptions o;
  o.reconnect_for = 400ms;
  o.jitter = 0;
  auto s = make(o);
  const auto t0 = Clock::now();
  Result<bool> last;
  EXPECT_EQ(read_all(*s, &last), (std::vector<int64_t>{0}));
  EXPECT_LT(Clock::now() - t0, 3s);
  ASSERT_FALSE(last);
  EXPECT_NE(last.error().message.find("--reconnect-for"), std::string::npos) << last.error().message;
  const SourceHealthSnapshot h = health.snapshot();
  EXPECT_EQ(h.reconnects, 3);  // each opening counted
  EXPECT_EQ(h.outages, 1);     // one outage throughout
  EXPECT_EQ(h.frames_lost_to_outages, 0);  // no frame came back: nothing to count from
  // Waits of 10, 20, 40 ms: the back-off did not start over at each opening.
  std::lock_guard lock(script.mutex);
  ASSERT_GE(script.reopen_times.size(), 4u);
  EXPECT_GE(script.reopen_times[3] - script.reopen_times[2], 39ms);
}

TEST_F(SupervisedSourceTest, GivesUpAfterReconnectFor) {
  script.opens = {{Step::kFrame, Step::kError}};
  SupervisorOptions o;
  o.reconnect_for = 300ms;
  auto s = make(o);
  const auto t0 = Clock::now();
  Result<bool> last;
  EXPECT_EQ(read_all(*s, &last), (std::vector<int64_t>{0}));
  EXPECT_LT(Clock::now() - t0, 3s);
  ASSERT_FALSE(last);
  EXPECT_NE(last.error().message.find("connection reset by peer"), std::string::npos) << last.error().message;
  EXPECT_EQ(health.snapshot().reconnects, 0);
  EXPECT_GE(script.reopen_times.size(), 2u);
}

// A stop request while the supervisor is in `state` (reached by the script) ends the read
// within a second (2 s allowed: a loaded machine).
class SupervisedSourceStopTest : public SupervisedSourceTest, public ::testing::WithParamInterface<SourceState> {};

TEST_P(SupervisedSourceStopTest, AStopRequestEndsTheReadWithinASecond) {
  const SourceState state = GetParam();
  SupervisorOptions o;
  script.stall_timeout = 60s;  // a stall that would last for a minute
  switch (state) {
    case SourceState::kLive:
      script.opens = {std::vector<Step>(10000, Step::kFrame)};
      script.pace = true;
      break;
    case SourceState::kStalled: script.opens = {{Step::kFrame, Step::kStall}}; break;
    case SourceState::kBackoff:
      script.opens = {{Step::kFrame, Step::kError}};
      o.backoff_initial = 60s;  // a wait that would last for a minute
      break;
    case SourceState::kConnecting:
      script.opens = {{Step::kFrame, Step::kError}};
      script.block_reopen = true;
      break;
    default: FAIL();
  }
  auto s = make(o);
  Frame f;
  ASSERT_TRUE(s->read(f).value());
  auto reading = std::async(std::launch::async, [&] {
    Result<bool> r = true;
    while (r && *r) r = s->read(f);  // a live source: frames until the stop
    return r;
  });
  // Let it get into the state, then stop.
  for (int i = 0; i < 200 && state != SourceState::kLive && state != SourceState::kStalled && health.snapshot().state != state; ++i)
    std::this_thread::sleep_for(10ms);
  if (state == SourceState::kBackoff || state == SourceState::kConnecting) {
    EXPECT_EQ(health.snapshot().state, state);
  }
  std::this_thread::sleep_for(100ms);
  const auto t0 = Clock::now();
  stop = true;
  ASSERT_EQ(reading.wait_for(2s), std::future_status::ready) << "the read did not end after the stop request";
  EXPECT_LT(Clock::now() - t0, 2s);
  Result<bool> r = reading.get();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(*r);
}

INSTANTIATE_TEST_SUITE_P(EveryState, SupervisedSourceStopTest,
                         ::testing::Values(SourceState::kLive, SourceState::kStalled, SourceState::kBackoff, SourceState::kConnecting),
                         [](const auto& info) { return std::string(source_state_name(info.param)); });

}  // namespace
}  // namespace sd
