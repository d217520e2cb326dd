// The tracker's cost per frame, and its assignment solver against a packaged one.
//
//   BM_ByteTrackerUpdate/100: one ByteTrack update with 100 moving objects (target: at most 50 us
//     a frame on one core, issue 24).
//   BM_ByteTrackerUpdateAppearance/100: the same with the appearance cue (a descriptor per detection,
//     made beforehand: the update's own cost).
//   BM_ByteTrackerUpdateAppearanceNoPartialBox/100: the same with partial_box 0 (what the handling of
//     partly hidden objects' boxes costs).
//   BM_AppearanceDescribe/{0,1}: one detection's colour descriptor read from a 1920x1080 frame,
//     BGR (0) or I420 (1): what the tracking stage adds per detection with the cue on.
//   BM_PlaceCounter/100: lines and zones (3 lines, 2 zones) fed one frame of 100 tracked objects.
//   BM_AssignmentOurs/N and BM_AssignmentDlib/N: one tracking-like N x N assignment (each track
//     overlapping its own detection and sometimes a neighbour's), by our component-wise Hungarian
//     and by dlib's max_cost_assignment (Debian's libdlib-dev; integer weights, dense O(N^3)).
#include <benchmark/benchmark.h>

#include <dlib/optimization/max_cost_assignment.h>

#include <opencv2/imgproc.hpp>

#include <random>
#include <vector>

#include "analytics/lines_zones.h"
#include "track/appearance.h"
#include "track/assignment.h"
#include "track/byte_tracker.h"

namespace {

using sd::Detection;

struct Scene {
  std::vector<double> x, y, vx, vy;
};

Scene make_scene(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> pos(0, 1800), vel(-4, 4);
  Scene s;
  for (int i = 0; i < n; ++i) {
    s.x.push_back(pos(rng));
    s.y.push_back(pos(rng) * 0.55);
    s.vx.push_back(vel(rng));
    s.vy.push_back(vel(rng));
  }
  return s;
}

std::vector<Detection> frame_of(const Scene& s, int f) {
  std::vector<Detection> dets;
  for (size_t i = 0; i < s.x.size(); ++i) {
    Detection d;
    d.x1 = static_cast<float>(s.x[i] + s.vx[i] * f);
    d.y1 = static_cast<float>(s.y[i] + s.vy[i] * f);
    d.x2 = d.x1 + 40;
    d.y2 = d.y1 + 80;
    d.score = (i % 7 == 0) ? 0.3f : 0.85f;  // some partly hidden ones for the second round
    d.class_id = static_cast<int>(i % 3);
    dets.push_back(d);
  }
  return dets;
}

void BM_ByteTrackerUpdate(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Scene scene = make_scene(n, 1);
  std::vector<std::vector<Detection>> frames;
  for (int f = 0; f < 256; ++f) frames.push_back(frame_of(scene, f));
  sd::track::ByteTracker tracker;
  int f = 0;
  for (auto _ : state) {
    auto ids = tracker.update(frames[static_cast<size_t>(f % 256)], (f % 256) * 1000.0 / 30);
    benchmark::DoNotOptimize(ids.data());
    if (++f % 256 == 0) {  // start the clip again with a fresh tracker, outside the timing
      state.PauseTiming();
      tracker = sd::track::ByteTracker();
      state.ResumeTiming();
    }
  }
  state.counters["live_tracks"] = static_cast<double>(tracker.live_track_count());
}
BENCHMARK(BM_ByteTrackerUpdate)->Arg(10)->Arg(100)->Arg(300)->Unit(benchmark::kMicrosecond);

// A 1920x1080 frame of coloured blocks (each object's box shows colours of its own).
cv::Mat colour_frame() {
  cv::Mat m(1080, 1920, CV_8UC3);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> c(0, 255);
  for (int y = 0; y < m.rows; y += 20)
    for (int x = 0; x < m.cols; x += 20)
      cv::rectangle(m, cv::Rect(x, y, 20, 20), cv::Scalar(c(rng), c(rng), c(rng)), cv::FILLED);
  return m;
}

void update_with_looks(benchmark::State& state, const sd::track::TrackerOptions& options) {
  const int n = static_cast<int>(state.range(0));
  const Scene scene = make_scene(n, 1);
  const cv::Mat picture = colour_frame();
  const sd::track::PixelView view{sd::track::PixelView::Format::kBgr, picture.data, picture.cols, picture.rows, picture.step[0]};
  std::vector<std::vector<Detection>> frames;
  std::vector<std::vector<sd::track::Appearance>> looks;
  for (int f = 0; f < 256; ++f) {
    frames.push_back(frame_of(scene, f));
    looks.emplace_back();
    for (const Detection& d : frames.back()) looks.back().push_back(sd::track::describe_box(view, d));
  }
  sd::track::ByteTracker tracker(options);
  int f = 0;
  for (auto _ : state) {
    const auto k = static_cast<size_t>(f % 256);
    auto ids = tracker.update(frames[k], (f % 256) * 1000.0 / 30, looks[k]);
    benchmark::DoNotOptimize(ids.data());
    if (++f % 256 == 0) {
      state.PauseTiming();
      tracker = sd::track::ByteTracker(options);
      state.ResumeTiming();
    }
  }
  state.counters["live_tracks"] = static_cast<double>(tracker.live_track_count());
}
void BM_ByteTrackerUpdateAppearance(benchmark::State& state) { update_with_looks(state, {}); }
BENCHMARK(BM_ByteTrackerUpdateAppearance)->Arg(10)->Arg(100)->Arg(300)->Unit(benchmark::kMicrosecond);
// The same without the partly-hidden-box handling (--track-partial-box 0): what it costs, A/B in
// one binary.
void BM_ByteTrackerUpdateAppearanceNoPartialBox(benchmark::State& state) {
  sd::track::TrackerOptions options;
  options.partial_box = 0;
  update_with_looks(state, options);
}
BENCHMARK(BM_ByteTrackerUpdateAppearanceNoPartialBox)->Arg(100)->Unit(benchmark::kMicrosecond);

void BM_AppearanceDescribe(benchmark::State& state) {
  const cv::Mat bgr = colour_frame();
  cv::Mat yuv;
  cv::cvtColor(bgr, yuv, cv::COLOR_BGR2YUV_I420);
  const bool i420 = state.range(0) == 1;
  const sd::track::PixelView view = i420 ? sd::track::PixelView{sd::track::PixelView::Format::kI420, yuv.data, bgr.cols, bgr.rows,
                                                                static_cast<size_t>(bgr.cols)}
                                         : sd::track::PixelView{sd::track::PixelView::Format::kBgr, bgr.data, bgr.cols, bgr.rows,
                                                                bgr.step[0]};
  const std::vector<Detection> boxes = frame_of(make_scene(100, 1), 0);
  size_t i = 0;
  for (auto _ : state) {
    auto look = sd::track::describe_box(view, boxes[i++ % boxes.size()]);
    benchmark::DoNotOptimize(look.v.data());
  }
}
BENCHMARK(BM_AppearanceDescribe)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_PlaceCounter(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Scene scene = make_scene(n, 2);
  std::vector<std::vector<Detection>> frames;
  for (int f = 0; f < 256; ++f) {
    frames.push_back(frame_of(scene, f));
    for (size_t i = 0; i < frames.back().size(); ++i) frames.back()[i].track_id = static_cast<int64_t>(i) + 1;
  }
  sd::SourcePlaces places;
  places.lines = {{"a", {0, 400}, {1900, 400}}, {"b", {900, 0}, {900, 1100}}, {"c", {0, 0}, {1900, 1000}}};
  places.zones = {{"left", {{0, 0}, {600, 0}, {600, 1000}, {0, 1000}}},
                  {"hex", {{900, 200}, {1200, 250}, {1300, 500}, {1100, 800}, {800, 700}, {700, 400}}}};
  sd::PlaceCounter counter(0, "bench", places, {"a", "b", "c"}, 5.0, 1000.0);
  std::vector<sd::CountEvent> events;
  int f = 0;
  for (auto _ : state) {
    events.clear();
    counter.update(frames[static_cast<size_t>(f % 256)], f, f * 1000.0 / 30, events);
    benchmark::DoNotOptimize(events.data());
    ++f;
  }
}
BENCHMARK(BM_PlaceCounter)->Arg(100)->Unit(benchmark::kMicrosecond);

// Gains of a tracking-like assignment: track i overlaps detection i strongly and, one time in
// four, detection i+1 weakly.
std::vector<double> tracking_gains(int n) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> strong(0.5, 0.95), weak(0.05, 0.3);
  std::vector<double> w(static_cast<size_t>(n) * static_cast<size_t>(n), 0.0);
  for (int i = 0; i < n; ++i) {
    w[static_cast<size_t>(i * n + i)] = strong(rng);
    if (i + 1 < n && rng() % 4 == 0) w[static_cast<size_t>(i * n + i + 1)] = weak(rng);
  }
  return w;
}

void BM_AssignmentOurs(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::vector<double> w = tracking_gains(n);
  for (auto _ : state) {
    auto a = sd::track::max_weight_matching(w, n, n);
    benchmark::DoNotOptimize(a.matches.data());
  }
}
BENCHMARK(BM_AssignmentOurs)->Arg(10)->Arg(100)->Arg(300)->Unit(benchmark::kMicrosecond);

void BM_AssignmentDlib(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::vector<double> w = tracking_gains(n);
  for (auto _ : state) {
    // What a caller of dlib does per frame: integer weights in a square matrix, then solve.
    dlib::matrix<long> m(n, n);
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c) m(r, c) = static_cast<long>(w[static_cast<size_t>(r * n + c)] * 1e6);
    auto a = dlib::max_cost_assignment(m);
    benchmark::DoNotOptimize(a.data());
  }
}
BENCHMARK(BM_AssignmentDlib)->Arg(10)->Arg(100)->Arg(300)->Unit(benchmark::kMicrosecond);

}  // namespace
