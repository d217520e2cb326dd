// The health board a camera watcher reads: states, outages and their time, overall health.
#include <gtest/gtest.h>

#include <thread>

#include "runtime/source_health.h"

namespace sd {
namespace {

TEST(SourceHealth, StartsConnectingAndGoesLiveWithTheFirstFrame) {
  SourceHealth h("rtsp://cam");
  EXPECT_EQ(h.snapshot().state, SourceState::kConnecting);
  EXPECT_EQ(h.snapshot().last_frame_wall_us, 0);
  h.frame_arrived();
  const auto s = h.snapshot();
  EXPECT_EQ(s.state, SourceState::kLive);
  EXPECT_EQ(s.frames, 1);
  EXPECT_GT(s.last_frame_wall_us, 0);
  EXPECT_EQ(s.outages, 0);
}

TEST(SourceHealth, AnOutageIsCountedOnceAndTimedUntilTheNextFrame) {
  SourceHealth h("rtsp://cam");
  h.frame_arrived();
  h.outage(SourceState::kStalled, "no frame for 2 s");
  h.outage(SourceState::kBackoff, "connection refused");  // the same outage, a later phase
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto during = h.snapshot();
  EXPECT_EQ(during.state, SourceState::kBackoff);
  EXPECT_EQ(during.outages, 1);
  EXPECT_GE(during.outage_ms, 20.0);  // the current outage counts while it lasts
  EXPECT_EQ(during.last_error, "connection refused");
  h.count_reconnect();
  h.frame_arrived();
  auto after = h.snapshot();
  EXPECT_EQ(after.state, SourceState::kLive);
  EXPECT_EQ(after.reconnects, 1);
  EXPECT_GE(after.outage_ms, during.outage_ms);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(h.snapshot().outage_ms, after.outage_ms);  // over: no longer grows
}

TEST(SourceHealth, OverallSaysWhetherEverySourceIsUp) {
  HealthBoard board;
  board.add("a").frame_arrived();
  board.add("b").frame_arrived();
  EXPECT_STREQ(HealthBoard::overall(board.snapshot()), "ok");
  board.at(1).outage(SourceState::kStalled, "no frame");
  EXPECT_STREQ(HealthBoard::overall(board.snapshot()), "degraded");
  board.at(0).set_state(SourceState::kFailed);
  EXPECT_STREQ(HealthBoard::overall(board.snapshot()), "down");
  board.at(1).set_state(SourceState::kConnecting);  // reopening within the outage: still down
  EXPECT_TRUE(board.snapshot()[1].in_outage);
  EXPECT_STREQ(HealthBoard::overall({board.snapshot()[1]}), "down");
  board.at(1).frame_arrived();
  EXPECT_FALSE(board.snapshot()[1].in_outage);
  board.at(0).set_state(SourceState::kEnded);
  EXPECT_STREQ(HealthBoard::overall(board.snapshot()), "ok");
  EXPECT_EQ(board.snapshot()[1].uri, "b");
}

}  // namespace
}  // namespace sd

namespace sd {
namespace {

// A Redis source connected again is up before its next entry (the stream may be empty a while).
TEST(SourceHealth, RecoveredEndsTheOutageBeforeTheNextFrame) {
  SourceHealth h("redis://127.0.0.1:6379/frames");
  h.frame_arrived();
  h.outage(SourceState::kBackoff, "connection lost");
  EXPECT_TRUE(h.snapshot().in_outage);
  h.recovered();
  const auto s = h.snapshot();
  EXPECT_FALSE(s.in_outage);
  EXPECT_EQ(s.state, SourceState::kLive);
  EXPECT_EQ(s.reconnects, 1);
  EXPECT_EQ(s.outages, 1);
  EXPECT_EQ(s.frames, 1);
}

}  // namespace
}  // namespace sd
