#include "serve/live_window.h"

#include <algorithm>

namespace sd {

LiveRates rates_between(const LiveStats& from, const LiveStats& to) {
  LiveRates r;
  const double dt = std::chrono::duration<double>(to.taken - from.taken).count();
  if (dt <= 0) return r;
  r.window_s = dt;
  // The verdict sees the window as a profile of its own: the same rules as the report at exit.
  ProfileReport p;
  p.wall_ms = dt * 1000.0;
  p.cpu_ms = std::max(0.0, to.cpu_ms - from.cpu_ms);
  p.cores = to.cores;
  p.workers = to.workers;
  for (int i = 0; i < kStageCount; ++i) {
    const auto& a = from.stages[static_cast<size_t>(i)];
    const auto& b = to.stages[static_cast<size_t>(i)];
    StageReport s;
    s.name = stage_name(static_cast<Stage>(i));
    s.threads = b.threads;
    s.hits = b.calls - a.calls;
    s.items_out = b.items - a.items;
    s.total_ms = std::max(0.0, b.busy_ms - a.busy_ms);
    s.wait_ms = std::max(0.0, b.wait_ms - a.wait_ms);
    s.blocked_ms = std::max(0.0, b.blocked_ms - a.blocked_ms);
    s.per_hit_ms = s.hits > 0 ? s.total_ms / static_cast<double>(s.hits) : 0;
    s.percent_of_wall = 100.0 * s.total_ms / p.wall_ms;
    s.utilization = s.threads > 0 ? std::min(1.0, s.total_ms / (p.wall_ms * s.threads)) : 0;
    r.stage_fps[static_cast<size_t>(i)] = static_cast<double>(s.items_out) / dt;
    r.stage_busy[static_cast<size_t>(i)] = s.utilization;
    p.stages.push_back(s);
  }
  for (size_t s = 0; s < to.sources.size(); ++s) {
    const bool had = s < from.sources.size();
    const int64_t read = to.sources[s].frames_read - (had ? from.sources[s].frames_read : 0);
    const int64_t done = to.sources[s].frames_done - (had ? from.sources[s].frames_done : 0);
    r.source_read_fps.push_back(static_cast<double>(read) / dt);
    r.source_done_fps.push_back(static_cast<double>(done) / dt);
    p.frames += done;
    // The window's own source figures, for the verdict's live-source and input rules.
    SourceReport source;
    source.uri = to.sources[s].name;
    source.live = to.sources[s].live;
    source.frames_read = read;
    source.frames_done = done;
    for (size_t d = 0; d < source.drops.size(); ++d) {
      source.drops[d] = to.sources[s].drops[d] - (had ? from.sources[s].drops[d] : 0);
      p.drops[d] += source.drops[d];
    }
    p.sources.push_back(source);
  }
  r.verdict = bottleneck_verdict(p);
  return r;
}

LiveRates LiveWindow::update(const LiveStats& now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!base_) {
    base_ = now;
    return last_;
  }
  if (std::chrono::duration<double>(now.taken - base_->taken).count() >= min_window_s_) {
    last_ = rates_between(*base_, now);
    base_ = now;
  }
  return last_;
}

}  // namespace sd
