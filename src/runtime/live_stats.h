// One reading of a running pipeline, for the web view, /metrics and /health (serve/): the
// stages' live figures, each source's counters, health and queue depths. Taken from any thread
// while the run goes; every part is read under its own lock or from atomics.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analytics/counting.h"
#include "core/frame.h"
#include "runtime/live_metrics.h"
#include "runtime/profiler.h"
#include "runtime/source_health.h"

namespace sd {

class RunContext;

// Frames waiting in front of a stage, per source.
enum class LiveQueue : int { kPreprocess, kInference, kSink };
inline constexpr int kLiveQueueCount = 3;
const char* live_queue_name(LiveQueue q);  // "preprocess", "inference", "sink"

struct LiveSourceStats {
  std::string name;                  // the source's URI with any password replaced by ***
  SourceHealthSnapshot health;       // health.uri as given (may hold a password: not for display)
  int64_t frames_read = 0, frames_done = 0;
  std::array<int64_t, kDropReasonCount> drops{};
  std::array<int64_t, kLiveQueueCount> queues{};
  bool live = false;  // frames arrive on the source's clock: the live verdict does not count its reading as work
  bool tracked = false;    // --track covers it
  int64_t live_tracks = 0;  // confirmed tracks matched in the latest frame written
};

struct LiveStats {
  Clock::time_point taken{};
  double uptime_s = 0;   // since the web server started
  double cpu_ms = 0;     // the process's CPU time so far
  int cores = 0;
  int workers = 0;
  double gpu_busy = -1;  // the GPU's busy share so far (0..1, NVML) where the engine runs on one; -1: not measured
  LiveMetrics::Snapshot stages{};
  std::vector<LiveSourceStats> sources;
  CountingReport counting;  // --line / --zone counts so far, every source
};

LiveStats collect_live_stats(RunContext& run, Clock::time_point since);

}  // namespace sd
