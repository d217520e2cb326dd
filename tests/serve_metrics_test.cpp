// The web view's figures without a server: the Prometheus text (format, label escaping,
// cumulative histogram buckets), /health's JSON and status, the live window's rates and verdict,
// the live histograms, --serve's address, and the frame board between sink and viewers.
#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "runtime/live_metrics.h"
#include "runtime/live_stats.h"
#include "serve/frame_board.h"
#include "serve/health_json.h"
#include "serve/live_window.h"
#include "serve/metrics_text.h"
#include "serve/serve_address.h"
#include "serve/stats_json.h"

namespace sd {
namespace {

LiveSourceStats source(const std::string& name, SourceState state) {
  LiveSourceStats s;
  s.name = name;
  s.health.uri = name;
  s.health.state = state;
  return s;
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

TEST(MetricsText, LabelValuesAreEscaped) {
  EXPECT_EQ(prometheus_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  LiveStats stats;
  stats.sources.push_back(source("cam \"front\"\\1", SourceState::kLive));
  stats.sources[0].frames_read = 7;
  const std::string text = prometheus_text(stats);
  EXPECT_NE(text.find("streamdet_frames_read_total{source=\"cam \\\"front\\\"\\\\1\"} 7\n"), std::string::npos) << text;
}

TEST(MetricsText, EveryFamilyHasHelpAndTypeAndCountersEndInTotal) {
  LiveStats stats;
  stats.sources.push_back(source("a", SourceState::kBackoff));
  stats.sources[0].drops[static_cast<size_t>(DropReason::kPolicy)] = 3;
  stats.sources[0].health.reconnects = 2;
  stats.sources[0].health.outage_ms = 1500;
  stats.sources[0].queues[static_cast<size_t>(LiveQueue::kInference)] = 4;
  const std::string text = prometheus_text(stats);
  for (const std::string& type : lines_starting(text, "# TYPE ")) {
    std::istringstream in(type.substr(7));
    std::string name, kind;
    in >> name >> kind;
    EXPECT_EQ(name.rfind("streamdet_", 0), 0u) << type;
    EXPECT_EQ(lines_starting(text, "# HELP " + name + " ").size(), 1u) << name;
    if (kind == "counter") EXPECT_TRUE(name.size() > 6 && name.substr(name.size() - 6) == "_total") << name;
  }
  EXPECT_NE(text.find("streamdet_frames_dropped_total{source=\"a\",reason=\"policy\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("streamdet_source_reconnects_total{source=\"a\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("streamdet_source_outage_seconds_total{source=\"a\"} 1.5\n"), std::string::npos);
  EXPECT_NE(text.find("streamdet_source_up{source=\"a\"} 0\n"), std::string::npos);  // backoff: down now
  EXPECT_NE(text.find("streamdet_source_state{source=\"a\",state=\"backoff\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("streamdet_source_state{source=\"a\",state=\"live\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("streamdet_queue_depth{source=\"a\",queue=\"inference\"} 4\n"), std::string::npos);
}

TEST(MetricsText, StageHistogramBucketsAreCumulativeWithSumAndCount) {
  LiveMetrics live;
  live.add(Stage::kInference, 0.3, 1);     // 0.0003 s: first bucket
  live.add(Stage::kInference, 7.0, 1);     // 0.007 s: le 0.01
  live.add(Stage::kInference, 7.0, 1);
  live.add(Stage::kInference, 60000, 4);   // a minute: +Inf only
  LiveStats stats;
  stats.stages = live.snapshot();
  const std::string text = prometheus_text(stats);
  const auto buckets = lines_starting(text, "streamdet_stage_duration_seconds_bucket{stage=\"inference\"");
  ASSERT_EQ(buckets.size(), LiveMetrics::kBuckets);
  EXPECT_EQ(buckets.front(), "streamdet_stage_duration_seconds_bucket{stage=\"inference\",le=\"0.0005\"} 1");
  EXPECT_NE(std::find(buckets.begin(), buckets.end(), "streamdet_stage_duration_seconds_bucket{stage=\"inference\",le=\"0.005\"} 1"),
            buckets.end());
  EXPECT_NE(std::find(buckets.begin(), buckets.end(), "streamdet_stage_duration_seconds_bucket{stage=\"inference\",le=\"0.01\"} 3"),
            buckets.end());
  EXPECT_EQ(buckets[buckets.size() - 2], "streamdet_stage_duration_seconds_bucket{stage=\"inference\",le=\"10\"} 3");
  EXPECT_EQ(buckets.back(), "streamdet_stage_duration_seconds_bucket{stage=\"inference\",le=\"+Inf\"} 4");
  int64_t previous = 0;
  for (const auto& b : buckets) {
    const int64_t v = std::stoll(b.substr(b.rfind(' ') + 1));
    EXPECT_GE(v, previous) << b;
    previous = v;
  }
  EXPECT_EQ(lines_starting(text, "streamdet_stage_duration_seconds_count{stage=\"inference\"}")[0],
            "streamdet_stage_duration_seconds_count{stage=\"inference\"} 4");
  const auto sum = lines_starting(text, "streamdet_stage_duration_seconds_sum{stage=\"inference\"}");
  ASSERT_EQ(sum.size(), 1u);
  EXPECT_NEAR(std::stod(sum[0].substr(sum[0].rfind(' ') + 1)), 60.0143, 1e-6);
  EXPECT_NE(text.find("streamdet_stage_frames_total{stage=\"inference\"} 7\n"), std::string::npos);
}

TEST(HealthJson, OkWhenEverySourceIsUpOrEndedElseDegradedOrDown) {
  LiveStats stats;
  stats.sources.push_back(source("a", SourceState::kLive));
  stats.sources.push_back(source("b", SourceState::kEnded));
  stats.sources[0].health.last_frame_wall_us = 1'000'000;
  nlohmann::json j = health_json(stats, 3'500'000);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_TRUE(health_is_ok(j));
  ASSERT_EQ(j["sources"].size(), 2u);
  EXPECT_EQ(j["sources"][0]["state"], "live");
  EXPECT_EQ(j["sources"][0]["up"], true);
  EXPECT_DOUBLE_EQ(j["sources"][0]["last_frame_age_seconds"].get<double>(), 2.5);
  EXPECT_TRUE(j["sources"][1]["last_frame_age_seconds"].is_null());

  stats.sources[1].health.state = SourceState::kFailed;
  stats.sources[1].health.last_error = "rtsp://u:secret@cam/1: connection refused";
  j = health_json(stats, 3'500'000);
  EXPECT_EQ(j["status"], "degraded");
  EXPECT_FALSE(health_is_ok(j));
  EXPECT_EQ(j["sources"][1]["last_error"], "rtsp://u:***@cam/1: connection refused");
  stats.sources[0].health.state = SourceState::kFailed;
  EXPECT_EQ(health_json(stats, 0)["status"], "down");
}

// A camera's reader "busy" 95% of the window is waiting for the camera's clock: the live verdict
// says the camera sets the pace (it said "bottleneck: read" before).
TEST(LiveWindow, ALiveCameraThePipelineKeepsUpWithIsSourceBound) {
  LiveStats a, b;
  a.taken = Clock::time_point{} + std::chrono::seconds(10);
  b.taken = a.taken + std::chrono::seconds(1);
  a.cores = b.cores = 4;
  a.sources.push_back(source("rtsp://cam", SourceState::kLive));
  b.sources.push_back(source("rtsp://cam", SourceState::kLive));
  a.sources[0].live = b.sources[0].live = true;
  b.sources[0].frames_read = b.sources[0].frames_done = 25;
  auto& read_b = b.stages[static_cast<size_t>(Stage::kRead)];
  read_b.threads = 1;
  read_b.items = read_b.calls = 25;
  read_b.busy_ms = 950;
  auto& inf_b = b.stages[static_cast<size_t>(Stage::kInference)];
  inf_b.threads = 1;
  inf_b.items = inf_b.calls = 25;
  inf_b.busy_ms = 300;
  b.cpu_ms = 400;
  a.stages[static_cast<size_t>(Stage::kRead)].threads = a.stages[static_cast<size_t>(Stage::kInference)].threads = 1;
  const LiveRates r = rates_between(a, b);
  EXPECT_EQ(r.verdict, "source-bound: the source delivers 25.0 fps and the pipeline keeps up (busiest stage: inference, 30% busy)");
}

TEST(LiveWindow, RatesAndVerdictCoverTheWindowOnly) {
  LiveStats a, b;
  a.taken = Clock::time_point{} + std::chrono::seconds(10);
  b.taken = a.taken + std::chrono::seconds(2);
  a.cores = b.cores = 8;
  a.sources.push_back(source("a", SourceState::kLive));
  b.sources.push_back(source("a", SourceState::kLive));
  a.sources[0].frames_read = 100;
  b.sources[0].frames_read = 160;
  a.sources[0].frames_done = 90;
  b.sources[0].frames_done = 150;
  auto& inf_a = a.stages[static_cast<size_t>(Stage::kInference)];
  auto& inf_b = b.stages[static_cast<size_t>(Stage::kInference)];
  inf_a.threads = inf_b.threads = 1;
  inf_a.items = 90;
  inf_b.items = 150;
  inf_a.calls = 90;
  inf_b.calls = 150;
  inf_a.busy_ms = 1000;
  inf_b.busy_ms = 1000 + 1900;  // 95% of the 2 s window
  b.cpu_ms = a.cpu_ms + 2000;   // one of 8 cores: not CPU-bound
  const LiveRates r = rates_between(a, b);
  EXPECT_DOUBLE_EQ(r.window_s, 2.0);
  EXPECT_DOUBLE_EQ(r.stage_fps[static_cast<size_t>(Stage::kInference)], 30.0);
  EXPECT_NEAR(r.stage_busy[static_cast<size_t>(Stage::kInference)], 0.95, 1e-9);
  ASSERT_EQ(r.source_read_fps.size(), 1u);
  EXPECT_DOUBLE_EQ(r.source_read_fps[0], 30.0);
  EXPECT_DOUBLE_EQ(r.source_done_fps[0], 30.0);
  EXPECT_EQ(r.verdict, "inference-bound: 31.67 ms a call (1 worker, 95% busy)");

  const nlohmann::json j = stats_json(b, r, 0);
  EXPECT_EQ(j["verdict"], r.verdict);
  EXPECT_EQ(j["sources"][0]["queues"].size(), 3u);
  EXPECT_EQ(j["sources"][0]["drops"].size(), static_cast<size_t>(kDropReasonCount));

  LiveWindow window(1.0);
  EXPECT_EQ(window.update(a).window_s, 0.0);  // the first reading starts the window
  EXPECT_DOUBLE_EQ(window.update(b).window_s, 2.0);
}

TEST(ServeAddress, PortAloneMeansLoopback) {
  auto a = parse_serve_address("8080");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8080);
  a = parse_serve_address("0.0.0.0:9000");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "0.0.0.0");
  EXPECT_EQ(a->port, 9000);
  a = parse_serve_address("[::1]:0");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 0);
  a = parse_serve_address(":81");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
}

TEST(ServeAddress, BadValuesAreUsageErrorsOnOneLine) {
  for (const char* bad : {"", "http", "host:", "host:99999", "host:-1", "::1:80", "[::1]80", "80x"}) {
    auto a = parse_serve_address(bad);
    ASSERT_FALSE(a) << bad;
    EXPECT_EQ(a.error().code, ErrorCode::kUsage);
    EXPECT_EQ(a.error().message.find('\n'), std::string::npos);
    EXPECT_EQ(a.error().message.rfind("--serve '", 0), 0u) << a.error().message;
  }
}

TEST(FrameBoard, FramesAreTakenOnlyWhileWatchedAndAtTheCappedRate) {
  FrameBoard board(2, 10.0);
  const Clock::time_point t0 = Clock::now();
  EXPECT_FALSE(board.wants(0, t0));  // nobody watches: the pipeline copies nothing
  {
    FrameBoard::Watch watch(board, 0);
    EXPECT_TRUE(board.wants(0, t0));
    EXPECT_FALSE(board.wants(1, t0));
    board.post(0, cv::Mat(48, 64, CV_8UC3, cv::Scalar(0, 128, 255)));
    EXPECT_FALSE(board.wants(0, Clock::now()));  // 10 fps: the next one in 100 ms
    EXPECT_TRUE(board.wants(0, Clock::now() + std::chrono::milliseconds(101)));
    auto jpeg = board.next(0, 0, std::chrono::milliseconds(1000));
    ASSERT_TRUE(jpeg);
    EXPECT_EQ(jpeg->sequence, 1u);
    ASSERT_GT(jpeg->data->size(), 4u);
    EXPECT_EQ(static_cast<unsigned char>((*jpeg->data)[0]), 0xFF);  // SOI
    EXPECT_EQ(static_cast<unsigned char>((*jpeg->data)[1]), 0xD8);
    auto again = board.next(0, 0, std::chrono::milliseconds(1000));  // a second viewer: the same bytes
    ASSERT_TRUE(again);
    EXPECT_EQ(again->data.get(), jpeg->data.get());
    EXPECT_FALSE(board.next(0, 1, std::chrono::milliseconds(10)));  // nothing newer
  }
  EXPECT_FALSE(board.wants(0, Clock::now() + std::chrono::seconds(1)));
}

TEST(FrameBoard, CloseWakesAWaitingViewer) {
  FrameBoard board(1, 10.0);
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    board.close();
  });
  const auto t0 = Clock::now();
  EXPECT_FALSE(board.next(0, 0, std::chrono::seconds(30)));
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(20));  // woken, not timed out (generous)
  closer.join();
}

TEST(LiveMetrics, ConcurrentAddsAreAllCounted) {
  LiveMetrics live;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) live.add(Stage::kRead, 1.0, 2);
    });
  for (int i = 0; i < 100; ++i) (void)live.snapshot();  // readers while the writers go
  for (auto& t : threads) t.join();
  const auto s = live.snapshot()[static_cast<size_t>(Stage::kRead)];
  EXPECT_EQ(s.calls, 4000);
  EXPECT_EQ(s.items, 8000);
  EXPECT_NEAR(s.busy_ms, 4000.0, 1e-6);
}

}  // namespace
}  // namespace sd
