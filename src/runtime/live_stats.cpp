#include "runtime/live_stats.h"

#include "core/build_info.h"
#include "core/uri_redaction.h"
#include "runtime/run_context.h"

namespace sd {

const char* live_queue_name(LiveQueue q) {
  switch (q) {
    case LiveQueue::kPreprocess: return "preprocess";
    case LiveQueue::kInference: return "inference";
    case LiveQueue::kSink: return "sink";
  }
  return "?";
}

LiveStats collect_live_stats(RunContext& run, Clock::time_point since) {
  LiveStats out;
  out.taken = Clock::now();
  out.uptime_s = std::chrono::duration<double>(out.taken - since).count();
  out.cpu_ms = process_cpu_ms();
  out.cores = cpu_count();
  out.workers = run.workers;
  out.gpu_busy = run.profiler.live_gpu_busy();
  out.stages = run.profiler.live().snapshot();
  const std::vector<SourceReport> counts = run.profiler.live_sources();
  const std::vector<SourceHealthSnapshot> health = run.health.snapshot();
  const std::vector<size_t> scheduled = run.scheduler ? run.scheduler->depths() : std::vector<size_t>{};
  for (size_t s = 0; s < run.lanes.size(); ++s) {
    LiveSourceStats src;
    const SourceLane& lane = run.lanes[s];
    src.name = without_password(lane.info.uri);
    src.live = lane.info.live;
    if (s < health.size()) src.health = health[s];
    if (s < counts.size()) {
      src.frames_read = counts[s].frames_read;
      src.frames_done = counts[s].frames_done;
      src.drops = counts[s].drops;
      src.tracked = counts[s].tracked;
      src.live_tracks = counts[s].live_tracks;
    }
    src.queues[static_cast<size_t>(LiveQueue::kPreprocess)] = lane.raw ? static_cast<int64_t>(lane.raw->size()) : 0;
    src.queues[static_cast<size_t>(LiveQueue::kInference)] = s < scheduled.size() ? static_cast<int64_t>(scheduled[s]) : 0;
    src.queues[static_cast<size_t>(LiveQueue::kSink)] = lane.done ? static_cast<int64_t>(lane.done->size()) : 0;
    out.sources.push_back(std::move(src));
    if (lane.counter) out.counting.append(lane.counter->counts());
  }
  return out;
}

}  // namespace sd
