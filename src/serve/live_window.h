// Rates over the last second or so, from two live readings: FPS per stage and per source, each
// stage's busy share, and the bottleneck verdict of the profile (bottleneck_verdict) computed on
// that window instead of the whole run, so the page says what limits the run now.
#pragma once

#include <array>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/live_stats.h"

namespace sd {

struct LiveRates {
  double window_s = 0;  // 0: no window yet (the figures are zero)
  std::array<double, kStageCount> stage_fps{};    // frames handled per second
  std::array<double, kStageCount> stage_busy{};   // busy time / (window * threads), 0..1
  std::vector<double> source_read_fps, source_done_fps;
  std::string verdict;
};

// The figures between two readings (`from` earlier than `to`).
LiveRates rates_between(const LiveStats& from, const LiveStats& to);

// Keeps the reading of about a second ago; update() gives the rates from it to now. Thread-safe
// (several page viewers poll at once).
class LiveWindow {
 public:
  explicit LiveWindow(double min_window_s = 1.0) : min_window_s_(min_window_s) {}
  LiveRates update(const LiveStats& now);

 private:
  std::mutex mutex_;
  double min_window_s_;
  std::optional<LiveStats> base_;  // the start of the window
  LiveRates last_;
};

}  // namespace sd
