// What the tracks' trails cost the output thread per frame (issue 24), with N tracked objects
// moving on a 1920x1080 frame:
//   BM_ByteTrackerTrailsUpdate/N: adding the frame's points to the trails (track/track_trails.h).
//   BM_ByteTrackerTrailsDraw/N: drawing N trails of 30 points (sinks/trail_drawing.h).
// (Named ByteTracker* so that --benchmark_filter=ByteTracker shows them beside the tracker's.)
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include <opencv2/core.hpp>

#include "sinks/trail_drawing.h"
#include "track/track_trails.h"

namespace {

std::vector<sd::Detections> moving_objects(int n, int frames) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> pos(0, 1800), vel(-4, 4);
  std::vector<float> x, y, vx, vy;
  for (int i = 0; i < n; ++i) x.push_back(pos(rng)), y.push_back(pos(rng) * 0.5f), vx.push_back(vel(rng)), vy.push_back(vel(rng));
  std::vector<sd::Detections> out(static_cast<size_t>(frames));
  for (int f = 0; f < frames; ++f)
    for (int i = 0; i < n; ++i) {
      sd::Detection d;
      d.x1 = x[static_cast<size_t>(i)] + vx[static_cast<size_t>(i)] * static_cast<float>(f);
      d.y1 = y[static_cast<size_t>(i)] + vy[static_cast<size_t>(i)] * static_cast<float>(f);
      d.x2 = d.x1 + 40, d.y2 = d.y1 + 80;
      d.score = 0.9f;
      d.track_id = i + 1;
      out[static_cast<size_t>(f)].push_back(d);
    }
  return out;
}

void BM_ByteTrackerTrailsUpdate(benchmark::State& state) {
  const auto frames = moving_objects(static_cast<int>(state.range(0)), 256);
  sd::track::TrackTrails trails;
  int64_t f = 0;
  for (auto _ : state) {
    trails.update(frames[static_cast<size_t>(f % 256)], static_cast<double>(f) * 1000.0 / 30);
    ++f;
  }
  state.counters["trails"] = static_cast<double>(trails.size());
}
BENCHMARK(BM_ByteTrackerTrailsUpdate)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);

void BM_ByteTrackerTrailsDraw(benchmark::State& state) {
  const auto frames = moving_objects(static_cast<int>(state.range(0)), 64);
  sd::track::TrackTrails trails;
  for (int f = 0; f < 64; ++f) trails.update(frames[static_cast<size_t>(f)], f * 1000.0 / 30);
  cv::Mat image(1080, 1920, CV_8UC3, cv::Scalar(40, 40, 40));
  for (auto _ : state) {
    sd::draw_trails(image, frames.back(), trails);
    benchmark::DoNotOptimize(image.data);
  }
}
BENCHMARK(BM_ByteTrackerTrailsDraw)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);

}  // namespace
