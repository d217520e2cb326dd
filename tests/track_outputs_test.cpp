// What tracking shows a user (issue 24): each track's trail (bounded, gone tracks forgotten, points
// oldest first), drawn in the track's colour where the object went; the live track count in
// /metrics and /stats while a run goes, and the tracks live and ids issued per source in the
// profile JSON at the end.
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "fake_engine.h"
#include "runtime/interrupt.h"
#include "runtime/live_stats.h"
#include "runtime/pipeline.h"
#include "serve/frame_board.h"
#include "serve/metrics_text.h"
#include "serve/stats_json.h"
#include "sinks/annotate.h"
#include "sinks/frame_overlay.h"
#include "sinks/trail_drawing.h"
#include "sinks/web_view_sink.h"
#include "test_util.h"
#include "track/track_trails.h"

namespace sd {
namespace {

using track::TrackTrails;

// A 10x10 box whose bottom centre is (x, y).
Detection standing_at(float x, float y, int64_t id, int class_id = 0) {
  Detection d;
  d.x1 = x - 5, d.x2 = x + 5, d.y1 = y - 10, d.y2 = y;
  d.score = 0.9f;
  d.class_id = class_id;
  d.track_id = id;
  return d;
}

TEST(TrackTrails, KeepsTheBottomCentresOldestFirstAndOnlyTheLastThirty) {
  TrackTrails trails;
  for (int f = 0; f < 100; ++f) trails.update({standing_at(static_cast<float>(f), 50, 7)}, f * 33.0);
  const TrackTrails::Trail* t = trails.find(7);
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->count, TrackTrails::kTrailPoints);
  for (int i = 0; i < t->count; ++i) {
    EXPECT_FLOAT_EQ(t->point(i).x, static_cast<float>(100 - TrackTrails::kTrailPoints + i)) << i;
    EXPECT_FLOAT_EQ(t->point(i).y, 50.f);
  }
  EXPECT_EQ(trails.size(), 1u);
  EXPECT_EQ(trails.find(8), nullptr);
}

TEST(TrackTrails, UntrackedDetectionsHaveNoTrail) {
  TrackTrails trails;
  trails.update({standing_at(10, 10, -1), standing_at(20, 20, 3)}, 0);
  EXPECT_EQ(trails.size(), 1u);
  ASSERT_NE(trails.find(3), nullptr);
  EXPECT_EQ(trails.find(3)->count, 1);
}

TEST(TrackTrails, ForgetsATrackNotSeenForTwoSecondsOfStreamTime) {
  TrackTrails trails;
  trails.update({standing_at(10, 10, 1), standing_at(50, 10, 2)}, 1000);
  for (double t = 1100; t <= 3000; t += 100) trails.update({standing_at(50, 10, 2)}, t);
  EXPECT_NE(trails.find(1), nullptr) << "seen 2.0 s ago: still kept";
  trails.update({standing_at(50, 10, 2)}, 3100);
  EXPECT_EQ(trails.find(1), nullptr) << "seen 2.1 s ago: forgotten";
  EXPECT_EQ(trails.size(), 1u);
  // The same id back later (a long --track-buffer) starts a new trail, kept in id order.
  trails.update({standing_at(70, 10, 1), standing_at(50, 10, 2), standing_at(90, 10, 5)}, 3200);
  ASSERT_NE(trails.find(1), nullptr);
  EXPECT_EQ(trails.find(1)->count, 1);
  EXPECT_FLOAT_EQ(trails.find(1)->point(0).x, 70.f);
  EXPECT_NE(trails.find(2), nullptr);
  EXPECT_NE(trails.find(5), nullptr);
  // A stream whose clock starts again (a restarted source) does not keep the old trails for ever.
  trails.update({}, 0);
  EXPECT_EQ(trails.size(), 0u);
}

TEST(TrackTrails, ManyTracksStayBounded) {
  TrackTrails trails;
  // 10,000 objects, each seen for one second at 30 fps, 20 at a time.
  for (int f = 0; f < 15000; ++f) {
    Detections dets;
    for (int k = 0; k < 20; ++k) dets.push_back(standing_at(1, 1, f / 30 * 20 + k));
    trails.update(dets, f * 1000.0 / 30);
  }
  // Only those seen in the last 2 s: this second's 20 and the two before's.
  EXPECT_LE(trails.size(), 3u * 20u);
  EXPECT_GE(trails.size(), 20u);
}

// The pixel at (x, y) is the colour drawn on black, at least half covered: anti-aliasing blends
// it with the background, so the pixel is alpha x colour (the same hue) with alpha in [0.5, 1].
bool has_colour(const cv::Mat& image, int x, int y, const cv::Scalar& colour) {
  const cv::Vec3b p = image.at<cv::Vec3b>(y, x);
  double pc = 0, cc = 0;
  for (int c = 0; c < 3; ++c) pc += p[c] * colour[c], cc += colour[c] * colour[c];
  const double alpha = pc / cc;
  if (alpha < 0.5 || alpha > 1.05) return false;
  for (int c = 0; c < 3; ++c)
    if (std::abs(p[c] - alpha * colour[c]) > 6) return false;
  return true;
}

bool is_black(const cv::Mat& image, int x, int y) { return image.at<cv::Vec3b>(y, x) == cv::Vec3b(0, 0, 0); }

TEST(TrailDrawing, TheTrailIsDrawnInTheTracksColourWhereTheObjectWent) {
  TrackTrails trails;
  // Track 4 walks right along y = 60, then down along x = 150; track 9 is new (one point: no trail).
  Detections now;
  int f = 0;
  for (int x = 20; x <= 150; x += 10, ++f) trails.update({standing_at(static_cast<float>(x), 60, 4)}, f * 33.0);
  for (int y = 70; y <= 120; y += 10, ++f) {
    now = {standing_at(150, static_cast<float>(y), 4)};
    if (y == 120) now.push_back(standing_at(30, 150, 9));
    trails.update(now, f * 33.0);
  }
  ASSERT_EQ(trails.find(4)->count, 20);
  cv::Mat image(200, 200, CV_8UC3, cv::Scalar(0, 0, 0));
  draw_trails(image, now, trails);
  const cv::Scalar colour = track_colour(4);
  // 14 points along y = 60 (x from 20, the oldest), then 6 down x = 150 to y = 120 (the newest).
  for (int x = 30; x <= 145; x += 5) EXPECT_TRUE(has_colour(image, x, 60, colour)) << "x " << x << " " << image.at<cv::Vec3b>(60, x);
  for (int y = 65; y <= 120; y += 5) EXPECT_TRUE(has_colour(image, 150, y, colour)) << "y " << y << " " << image.at<cv::Vec3b>(y, 150);
  EXPECT_FALSE(has_colour(image, 90, 60, track_colour(5))) << "another track's colour";
  // Nothing where the object never went, and no trail for the one that stood still.
  EXPECT_TRUE(is_black(image, 90, 100));
  EXPECT_TRUE(is_black(image, 150, 140));
  EXPECT_TRUE(is_black(image, 30, 150));

  // A track not in this frame's detections (lost now) is not drawn; points scale to a smaller frame.
  cv::Mat lost(200, 200, CV_8UC3, cv::Scalar(0, 0, 0));
  draw_trails(lost, {standing_at(30, 150, 9)}, trails);
  EXPECT_EQ(cv::countNonZero(lost.reshape(1)), 0);
  cv::Mat half(100, 100, CV_8UC3, cv::Scalar(0, 0, 0));
  draw_trails(half, now, trails, 0.5f, 0.5f);
  EXPECT_TRUE(has_colour(half, 45, 30, colour));
  EXPECT_TRUE(has_colour(half, 75, 50, colour));
  EXPECT_TRUE(is_black(half, 45, 60));
}

// One overlay for the annotated video, the web view and the --show window: on a frame decoded at
// half its picture's size, the trail, the box and a counting line all land at half their
// coordinates (the --show window drew the boxes at full scale before, and no trails or lines).
TEST(FrameOverlay, TrailsBoxesAndLinesAreDrawnAtTheDecodedFramesScale) {
  TrackTrails trails;
  Detections now;
  for (int f = 0; f <= 6; ++f) {
    now = {standing_at(20.f + 10.f * static_cast<float>(f), 60, 6)};  // walks right along y = 60 to x = 80
    trails.update(now, f * 33.0);
  }
  SourcePlaces places;
  places.lines.push_back({"gate", {20, 180}, {180, 180}});  // a horizontal line at y = 180
  const CountingReport counts;
  cv::Mat half(100, 100, CV_8UC3, cv::Scalar(0, 0, 0));  // the picture was 200x200
  draw_overlay(half, cv::Size(200, 200), FrameOverlay{&now, &trails, &places, &counts}, {"thing"});
  const cv::Scalar colour = track_colour(6);
  EXPECT_TRUE(has_colour(half, 20, 30, colour)) << "the trail (y 60 -> 30) at half scale";
  EXPECT_TRUE(has_colour(half, 43, 28, colour)) << "the box's right edge (85 -> 42.5, drawn at 43) at half scale";
  EXPECT_TRUE(is_black(half, 50, 60)) << "nothing where the trail would be at full scale";
  EXPECT_TRUE(is_black(half, 84, 55)) << "nothing where the box's edge would be at full scale";
  EXPECT_FALSE(is_black(half, 50, 90)) << "the counting line at y = 90";
  EXPECT_TRUE(is_black(half, 50, 70));

  // At the picture's own size (an empty original size means the same), the same at full scale.
  cv::Mat full(200, 200, CV_8UC3, cv::Scalar(0, 0, 0));
  draw_overlay(full, cv::Size(), FrameOverlay{&now, &trails, nullptr, nullptr}, {"thing"});
  EXPECT_TRUE(has_colour(full, 50, 60, colour));
  EXPECT_TRUE(has_colour(full, 85, 55, colour));
  EXPECT_TRUE(is_black(full, 100, 180)) << "no places given, none drawn";
}

TEST(TrailDrawing, NeighboursOfOneClassGetDifferentColoursWhenTracked) {
  for (int64_t id = 1; id < 50; ++id) EXPECT_NE(track_colour(id), track_colour(id + 1)) << id;
  EXPECT_EQ(detection_colour(standing_at(0, 0, -1, 3)), class_colour(3));
  EXPECT_EQ(detection_colour(standing_at(0, 0, 12, 3)), track_colour(12));
  // The box of a tracked detection is drawn in its track's colour.
  cv::Mat image(100, 100, CV_8UC3, cv::Scalar(0, 0, 0));
  Detection d = standing_at(50, 80, 12, 3);
  d.x1 = 20, d.x2 = 80, d.y1 = 40;
  draw_detections(image, {d}, {"a", "b", "c", "d"});
  EXPECT_TRUE(has_colour(image, 50, 80, track_colour(12)));
}

// The web view draws on its own copy of the frames it sends (when no other output has the
// pipeline draw them): the trails too. Its JPEG blurs colours, so: not black along the trail.
TEST(TrailDrawing, TheWebViewsFramesHaveTheTrails) {
  TrackTrails trails;
  for (int x = 100; x <= 700; x += 20) trails.update({standing_at(static_cast<float>(x), 400, 3)}, x * 1.0);
  auto board = std::make_shared<FrameBoard>(1, 1000.0, 95);
  WebViewSink sink(board, {"a"}, /*frames_drawn=*/false);
  FrameBoard::Watch watch(*board, 0);
  FrameResult result;
  result.frame.image = cv::Mat(800, 800, CV_8UC3, cv::Scalar(0, 0, 0));
  result.frame.set_bgr();
  result.detections = {standing_at(700, 400, 3)};
  result.trails = &trails;
  ASSERT_TRUE(sink.write(result));
  auto jpeg = board->next(0, 0, std::chrono::milliseconds(1000));
  ASSERT_TRUE(jpeg);
  const std::vector<uchar> bytes(jpeg->data->begin(), jpeg->data->end());
  const cv::Mat shown = cv::imdecode(bytes, cv::IMREAD_COLOR);
  ASSERT_EQ(shown.size(), cv::Size(800, 800));
  const auto brightness = [&](int x, int y) {
    const cv::Vec3b p = shown.at<cv::Vec3b>(y, x);
    return p[0] + p[1] + p[2];
  };
  for (int x = 150; x <= 650; x += 50) EXPECT_GT(brightness(x, 400), 150) << "x " << x;
  EXPECT_LT(brightness(400, 300), 30);
}

TEST(TrackMetrics, LiveTracksGaugeOnlyForTrackedSources) {
  LiveStats stats;
  stats.sources.resize(2);
  stats.sources[0].name = "rtsp://user:***@cam/1";
  stats.sources[0].tracked = true;
  stats.sources[0].live_tracks = 3;
  stats.sources[1].name = "b.mp4";
  const std::string text = prometheus_text(stats);
  EXPECT_NE(text.find("# HELP streamdet_live_tracks "), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE streamdet_live_tracks gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("streamdet_live_tracks{source=\"rtsp://user:***@cam/1\"} 3\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("streamdet_live_tracks{source=\"b.mp4\"}"), std::string::npos) << text;
  const nlohmann::json j = stats_json(stats, LiveRates{}, 0);
  EXPECT_EQ(j["sources"][0]["live_tracks"], 3);
  EXPECT_FALSE(j["sources"][1].contains("live_tracks"));
  stats.sources[0].tracked = false;
  EXPECT_EQ(prometheus_text(stats).find("streamdet_live_tracks"), std::string::npos);
}

// The fake engine puts one box on a frame, where the frame's mean says: on a synthetic source
// with no objects (a still background, a little noise) the same place every frame, so one track.
RunOptions one_object_run(const test::TempDir& dir, const std::string& source) {
  test::write_minimal_onnx(dir.file("fake.onnx"));
  test::register_fake_engine("fake-track", test::FakeEngineConfig{});
  RunOptions o;
  o.model.model = dir.file("fake.onnx");
  o.model.engine = "fake-track";
  o.quiet = true;
  o.sources = {source};
  o.detections = dir.file("d.jsonl");
  o.profile_json = dir.file("profile.json");
  o.track = TrackMode::kByteTrack;
  return o;
}

int64_t sample_value(const std::string& text, const std::string& series) {
  const size_t at = text.find(series + " ");
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + series.size() + 1));
}

TEST(TrackMetrics, MetricsStatsAndProfileCountTheLiveTracksOfARun) {
  clear_interrupt();
  test::TempDir dir;
  const std::string source = "synth:w=160,h=96,fps=60,frames=0,objects=0,live=1";
  RunOptions o = one_object_run(dir, source);
  const int port = test::free_loopback_port();
  ASSERT_GT(port, 0);
  o.serve = "127.0.0.1:" + std::to_string(port);
  auto run = std::async(std::launch::async, [&] { return run_detection(o); });
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(30);
  const std::string done = "streamdet_frames_done_total{source=\"" + source + "\"}";
  const std::string tracks = "streamdet_live_tracks{source=\"" + source + "\"}";
  std::string metrics;
  nlohmann::json stats;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    auto res = client.Get("/metrics");
    if (res && res->status == 200) {
      metrics = res->body;
      if (sample_value(metrics, done) >= 10) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(sample_value(metrics, done), 10) << metrics;
  EXPECT_EQ(sample_value(metrics, tracks), 1) << metrics;
  EXPECT_NE(metrics.find("# TYPE streamdet_live_tracks gauge\n"), std::string::npos);
  auto res = client.Get("/stats");
  ASSERT_TRUE(res);
  EXPECT_EQ(nlohmann::json::parse(res->body)["sources"][0]["live_tracks"], 1) << res->body;
  request_interrupt();
  ASSERT_EQ(run.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  run.get();
  clear_interrupt();
  std::ifstream in(dir.file("profile.json"));
  ASSERT_TRUE(in) << "no profile JSON";
  const nlohmann::json profile = nlohmann::json::parse(in);
  EXPECT_EQ(profile["sources"][0]["live_tracks"], 1) << profile.dump(1);
  EXPECT_EQ(profile["sources"][0]["track_ids_issued"], 1) << profile.dump(1);
}

TEST(TrackMetrics, ProfileHasNoTrackCountsForAnUntrackedSource) {
  test::TempDir dir;
  RunOptions o = one_object_run(dir, "synth:w=160,h=96,fps=30,frames=5,objects=0");
  o.track = TrackMode::kOff;
  RunOutcome out = run_detection(o);
  ASSERT_TRUE(out.status) << out.status.error().message;
  std::ifstream in(dir.file("profile.json"));
  const nlohmann::json profile = nlohmann::json::parse(in);
  ASSERT_EQ(profile["sources"].size(), 1u);
  EXPECT_FALSE(profile["sources"][0].contains("live_tracks")) << profile.dump(1);
  EXPECT_FALSE(profile["sources"][0].contains("track_ids_issued"));
}

}  // namespace
}  // namespace sd
