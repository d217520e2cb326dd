// The always-on profiler. Each thread records into its own StageRecorder (no lock on the hot
// path); report() merges them into what the user sees at exit: per stage hits, busy time, per
// hit, % of wall time, p50/p99, time waiting for input and blocked on a full output queue, items
// in/out and drops; per-frame end-to-end latency; inference FPS next to end-to-end FPS; and a
// one-line bottleneck verdict. With tracing on, recorders also keep one span per stage per frame
// for the Chrome/Perfetto trace (runtime/trace.h). Every span is also an NVTX range.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analytics/counting.h"
#include "core/frame.h"
#include "engine/native/gpu_busy.h"
#include "runtime/latency_histogram.h"
#include "runtime/live_metrics.h"
#include "runtime/nvtx.h"
#include "runtime/source_health.h"

namespace sd {

// kTrack: the tracker (runs only with --track; its row is left out of the table when it did not run).
enum class Stage : int { kRead, kPreprocess, kInference, kPostprocess, kTrack, kDraw, kWrite };
inline constexpr int kStageCount = 7;
static_assert(kStageCount == kLiveStageCount);
const char* stage_name(Stage stage);

// Why a frame was not processed; each is counted.
enum class DropReason : int { kPolicy, kEvery, kMaxAge, kCorrupt, kAborted };
inline constexpr int kDropReasonCount = 5;
const char* drop_reason_name(DropReason reason);

// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), in ms.
double thread_cpu_ms();
// How long the calling thread has waited, runnable, for a core (the kernel's run-queue delay,
// /proc/thread-self/schedstat), in ms; -1 where the kernel does not say.
double thread_run_queue_ms();

struct TraceSpan {
  Stage stage;
  int source_id;
  int64_t frame;   // frame index in its source (-1 for a span over several frames, e.g. a batch)
  int items;       // frames in the span (a batch of 4 is one span with items 4)
  Clock::time_point begin, end;
};

// Per-thread recorder. Only its owning thread writes to it while the run is going. With `live`,
// every figure also goes to the run's LiveMetrics (atomics other threads read during the run).
class StageRecorder {
 public:
  StageRecorder(std::string thread_name, bool trace, size_t max_spans, LiveMetrics* live = nullptr)
      : thread_name_(std::move(thread_name)), trace_(trace), max_spans_(max_spans), live_(live) {
    if (trace_) spans_.reserve(std::min<size_t>(max_spans_, 1 << 16));
  }

  void add(Stage stage, Clock::time_point begin, Clock::time_point end, int64_t items = 1, int source_id = 0,
           int64_t frame = -1) {
    add(stage, std::chrono::duration<double, std::milli>(end - begin).count(), items);
    if (trace_ && spans_.size() < max_spans_)
      spans_.push_back(TraceSpan{stage, source_id, frame, static_cast<int>(items), begin, end});
  }
  void add(Stage stage, double ms, int64_t items = 1) {  // for callers that timed it themselves
    auto& s = stages_[static_cast<size_t>(stage)];
    if (live_) {
      if (s.busy.count() == 0) live_->add_thread(stage);
      live_->add(stage, ms, items);
    }
    s.busy.add(ms);
    s.items_out += items;
  }
  void add_cpu(Stage stage, double ms) { stages_[static_cast<size_t>(stage)].cpu_ms += ms; }
  void add_wait(Stage stage, double ms) {
    stages_[static_cast<size_t>(stage)].wait_ms += ms;
    if (live_) live_->add_wait(stage, ms);
  }
  void add_blocked(Stage stage, double ms) {
    stages_[static_cast<size_t>(stage)].blocked_ms += ms;
    if (live_) live_->add_blocked(stage, ms);
  }
  void add_items_in(Stage stage, int64_t n) { stages_[static_cast<size_t>(stage)].items_in += n; }
  void add_drop(Stage stage, int64_t n = 1) { stages_[static_cast<size_t>(stage)].drops += n; }
  void add_frame_latency(double ms) { frame_latency_.add(ms); }

  const std::string& thread_name() const { return thread_name_; }
  // Called by the thread that owns the most recent recorder it made, when it is done: what it
  // waited for a core over its life (Profiler::make_recorder marks the start).
  static void finish_thread();
  double run_queue_ms() const { return run_queue_ms_; }

  struct StageData {
    LatencyHistogram busy;  // one sample per call (a batch counts once)
    double cpu_ms = 0;      // the recording thread's CPU time within those calls
    double wait_ms = 0;     // waiting for input
    double blocked_ms = 0;  // waiting for room in the output queue
    int64_t items_in = 0;   // frames taken from the input queue
    int64_t items_out = 0;  // frames handled (a batch of 4 adds 4)
    int64_t drops = 0;      // frames this stage dropped
  };
  const StageData& stage(Stage s) const { return stages_[static_cast<size_t>(s)]; }
  const LatencyHistogram& frame_latency() const { return frame_latency_; }
  const std::vector<TraceSpan>& spans() const { return spans_; }
  bool spans_truncated() const { return trace_ && spans_.size() >= max_spans_; }

 private:
  std::string thread_name_;
  bool trace_;
  size_t max_spans_;
  std::array<StageData, kStageCount> stages_{};
  LatencyHistogram frame_latency_;
  std::vector<TraceSpan> spans_;
  double run_queue_start_ms_ = thread_run_queue_ms();  // made on its own thread
  double run_queue_ms_ = -1;                           // -1: not known (yet)
  LiveMetrics* live_;
};

// Times a scope into a recorder (and an NVTX range of the stage's name).
class ScopedStage {
 public:
  ScopedStage(StageRecorder& recorder, Stage stage, int64_t items = 1, int source_id = 0, int64_t frame = -1)
      : recorder_(recorder), stage_(stage), items_(items), source_id_(source_id), frame_(frame),
        nvtx_(stage_name(stage)), cpu_begin_(thread_cpu_ms()), begin_(Clock::now()) {}
  ~ScopedStage() {
    recorder_.add(stage_, begin_, Clock::now(), items_, source_id_, frame_);
    recorder_.add_cpu(stage_, thread_cpu_ms() - cpu_begin_);
  }
  ScopedStage(const ScopedStage&) = delete;
  ScopedStage& operator=(const ScopedStage&) = delete;

 private:
  StageRecorder& recorder_;
  Stage stage_;
  int64_t items_;
  int source_id_;
  int64_t frame_;
  NvtxRange nvtx_;
  double cpu_begin_;
  Clock::time_point begin_;
};

struct StageReport {
  std::string name;
  int threads = 0;  // threads that ran this stage
  int64_t hits = 0;
  int64_t items_in = 0, items_out = 0, drops = 0;
  double total_ms = 0, per_hit_ms = 0, percent_of_wall = 0, p50_ms = 0, p99_ms = 0, max_ms = 0;
  double wait_ms = 0, blocked_ms = 0;
  double utilization = 0;  // busy / (wall * threads)
  // CPU time of the stage's own threads within its calls (-1: not measured). Far below total_ms:
  // the stage waits on something else (a disk, a device, a lock, a core). Work the stage hands to
  // other threads (an engine's thread pool beyond the worker's own thread) is not in it.
  double cpu_ms = -1;
  // preprocess and postprocess: where their work ran ("cpu", or the GPU with --preprocess-on gpu,
  // whose upload and letterbox kernel are timed in the inference stage); "" for the other stages.
  std::string ran_on;
};

struct SourceReport {
  std::string uri;
  int64_t frames_read = 0;
  int64_t frames_done = 0;
  std::array<int64_t, kDropReasonCount> drops{};
  bool live = false;  // frames arrive on the source's clock (camera, stream)
  // A live source's outages (runtime/source_health.h; filled by the pipeline from the health board).
  int64_t outages = 0;
  int64_t reconnects = 0;
  double outage_ms = 0;
  int64_t frames_lost = 0;  // to outages, estimated from the source's frame rate
  int64_t damaged = 0;      // decoded from data cut off or corrupt in the source, and processed (Source::damaged_frames)
  // With --track: the confirmed tracks matched in the latest frame, and the ids handed out so far.
  bool tracked = false;
  int64_t live_tracks = 0;
  int64_t track_ids_issued = 0;
  std::string decoder;  // what decoded a video's frames (SourceInfo::decoder); "" for other sources
  // Where NVDEC's frames went: "nvdec -> gpu preprocess (no host copy)", or downloaded and why;
  // "" for sources not decoded by NVDEC (runtime/preprocess_on.h, nvdec_frame_path).
  std::string frame_path;
};

struct ProfileReport {
  std::vector<StageReport> stages;
  std::vector<SourceReport> sources;
  double wall_ms = 0;
  int64_t frames = 0;          // frames that reached the sinks
  // Frames the source's damage touched, as its warning counts them: skipped because they could not
  // be decoded (drops "corrupt"), or decoded from data cut off or corrupt (SourceReport::damaged).
  int64_t corrupt_frames = 0;
  std::array<int64_t, kDropReasonCount> drops{};
  int workers = 1;
  double inference_fps = 0;    // what the inference stage sustains when never starved
  double e2e_fps = 0;          // frames per second of wall time
  double latency_p50_ms = 0, latency_p90_ms = 0, latency_p99_ms = 0, latency_max_ms = 0;  // capture -> sinks
  std::vector<HistogramBin> latency_bins;  // the same distribution, for the report's picture
  double cpu_ms = 0;           // the process's CPU time over the run: every thread (decoders, OpenMP pools too)
  int cores = 0;               // logical CPUs the process may use (0: unknown)
  double machine_busy_ms = -1; // CPU time of those cores spent by anyone (this process and others); -1: unknown
  double run_queue_ms = -1;    // the stage threads' time runnable but waiting for a core, summed; -1: unknown
  std::vector<std::string> outputs;  // the sinks, by kind ("video", "jsonl", ...), for the verdict
  std::string verdict;         // one line: which stage limits throughput, and who waits on whom
  // The GPU's busy share over the run (NVML, engine/native/gpu_busy.h), where the engine ran on a
  // GPU: -1 where it was not measured, and gpu_busy_note says why ("" on the CPU).
  double gpu_busy = -1, gpu_memory_busy = -1, gpu_memory_used_mb = -1;
  int gpu_busy_samples = 0;
  std::string gpu_busy_note;
  CountingReport counting;     // --line / --zone counts (filled by the pipeline at the end)
};

class Profiler {
 public:
  explicit Profiler(bool trace = false, size_t max_spans_per_thread = 4'000'000)
      : trace_(trace), max_spans_(max_spans_per_thread) {}
  // Registers a recorder for the calling thread; the Profiler owns it.
  StageRecorder& make_recorder(const std::string& thread_name);
  void start();
  void stop();
  Clock::time_point start_time() const { return start_; }
  bool tracing() const { return trace_; }

  // Sources are registered before the run; counters are atomic (written from several threads).
  int add_source(const std::string& uri, bool live = false, const std::string& decoder = "");
  void set_outputs(std::vector<std::string> names) { outputs_ = std::move(names); }
  void set_frame_path(int source, std::string path);  // SourceReport::frame_path
  // The run's health board: the report's sources get their outages from it (set before the run).
  void set_health(const HealthBoard* board) { health_ = board; }
  void count_read(int source) { source_counters_[static_cast<size_t>(source)].read++; }
  void count_frame_done(int source = 0, int64_t n = 1) {
    frames_ += n;
    if (source < static_cast<int>(source_counters_.size())) source_counters_[static_cast<size_t>(source)].done += n;
  }
  void count_drop(int source, DropReason reason, int64_t n = 1);
  void count_corrupt_frame(int source = 0) { count_drop(source, DropReason::kCorrupt); }
  // Frames decoded from damaged data (processed, not dropped), told by the source at the end.
  void count_damaged(int source, int64_t n);
  void set_workers(int n) { workers_ = n; }
  // The engine runs on GPU `device` (CUDA's index): its busy share is sampled from start() to
  // stop() through NVML; where NVML is missing the report says why (and the caller, once).
  void watch_gpu(int device) { gpu_device_ = device; }
  // Set by start() when watch_gpu was asked for and NVML cannot be used; "" otherwise.
  std::string gpu_busy_problem() const { return gpu_busy_note_; }
  // The busy share so far (0..1), -1 without a sampler: for /metrics.
  double live_gpu_busy() const;
  // Where frames are letterboxed (runtime/preprocess_on.h); set before the run.
  void set_preprocess_place(std::string where) { preprocess_on_ = std::move(where); }
  // Where the head is decoded and NMS'd (runtime/postprocess_on.h); set before the run. A worker
  // whose GPU decode failed under --postprocess-on auto says so (any thread): the profile then
  // names the CPU, with the GPU it started on.
  void set_postprocess_place(std::string where) { postprocess_on_ = std::move(where); }
  void postprocess_left_gpu() { postprocess_left_gpu_.store(true, std::memory_order_relaxed); }
  // A tracked source's tracker after each frame (its output thread): tracks live, ids issued.
  void set_tracks(int source, int64_t live, int64_t ids_issued) {
    SourceCounters& c = source_counters_[static_cast<size_t>(source)];
    c.live_tracks.store(live, std::memory_order_relaxed);
    c.track_ids.store(ids_issued, std::memory_order_relaxed);
  }

  // While the run goes, from any thread: the stages' live figures, and the per-source counters
  // (frames_read, frames_done, drops; the other fields of SourceReport are left empty).
  const LiveMetrics& live() const { return live_; }
  std::vector<SourceReport> live_sources() const;
  int workers() const { return workers_; }

  // Merges all recorders; call after the threads that write them have stopped.
  ProfileReport report() const;
  // For the trace writer: every recorder, in registration order.
  std::vector<const StageRecorder*> recorders() const;

 private:
  struct SourceCounters {
    std::string uri;
    std::string decoder;
    std::string frame_path;
    bool live = false;
    std::atomic<int64_t> read{0}, done{0}, damaged{0};
    std::atomic<int64_t> live_tracks{-1}, track_ids{-1};  // -1: not tracked
    std::array<std::atomic<int64_t>, kDropReasonCount> drops{};
  };
  bool trace_;
  size_t max_spans_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<StageRecorder>> recorders_;
  std::deque<SourceCounters> source_counters_;  // deque: stable addresses, atomics are not movable
  Clock::time_point start_{}, stop_{};
  double start_cpu_ms_ = 0, stop_cpu_ms_ = -1;  // the process's CPU clock
  double start_busy_ms_ = -1, stop_busy_ms_ = -1;  // our cores' busy time, everyone's (/proc/stat)
  std::atomic<int64_t> frames_{0};
  int workers_ = 1;
  int gpu_device_ = -1;
  std::shared_ptr<native::GpuBusySampler> gpu_busy_;
  std::string gpu_busy_note_;
  std::optional<native::GpuBusySummary> gpu_busy_final_;
  std::string preprocess_on_ = "cpu";
  std::string postprocess_on_ = "cpu";
  std::atomic<bool> postprocess_left_gpu_{false};
  std::vector<std::string> outputs_;
  const HealthBoard* health_ = nullptr;
  std::vector<SourceReport> source_reports() const;
  LiveMetrics live_;
};

// The table printed at exit (the line-profiler layout of the seeds, for the whole pipeline).
std::string format_profile(const ProfileReport& report);
nlohmann::json profile_to_json(const ProfileReport& report);
// The bottleneck verdict from the stage figures and the process's CPU time against its cores (also
// stored in ProfileReport::verdict): a run whose threads together use (nearly) every core is
// CPU-bound, whatever stage looks busiest (a stage's busy time then includes waiting for a core).
std::string bottleneck_verdict(const ProfileReport& report);

// The process's CPU time so far, every thread (CLOCK_PROCESS_CPUTIME_ID), in ms.
double process_cpu_ms();

}  // namespace sd
