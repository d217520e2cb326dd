#include "runtime/profiler.h"

#include <time.h>
#include <unistd.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/build_info.h"

namespace sd {

const char* stage_name(Stage stage) {
  switch (stage) {
    case Stage::kRead: return "read";
    case Stage::kPreprocess: return "preprocess";
    case Stage::kInference: return "inference";
    case Stage::kPostprocess: return "postprocess";
    case Stage::kTrack: return "track";
    case Stage::kDraw: return "draw";
    case Stage::kWrite: return "write";
  }
  return "?";
}

const char* drop_reason_name(DropReason reason) {
  switch (reason) {
    case DropReason::kPolicy: return "policy";
    case DropReason::kEvery: return "every";
    case DropReason::kMaxAge: return "max-age";
    case DropReason::kCorrupt: return "corrupt";
    case DropReason::kAborted: return "aborted";
  }
  return "?";
}

namespace {
thread_local StageRecorder* this_threads_recorder = nullptr;
}  // namespace

StageRecorder& Profiler::make_recorder(const std::string& thread_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  recorders_.push_back(std::make_unique<StageRecorder>(thread_name, trace_, max_spans_, &live_));
  this_threads_recorder = recorders_.back().get();
  return *recorders_.back();
}

void StageRecorder::finish_thread() {
  StageRecorder* rec = this_threads_recorder;
  if (!rec) return;
  this_threads_recorder = nullptr;
  const double now = thread_run_queue_ms();
  if (now >= 0 && rec->run_queue_start_ms_ >= 0) rec->run_queue_ms_ = now - rec->run_queue_start_ms_;
}

void Profiler::set_frame_path(int source, std::string path) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (source >= 0 && static_cast<size_t>(source) < source_counters_.size()) source_counters_[static_cast<size_t>(source)].frame_path = std::move(path);
}

int Profiler::add_source(const std::string& uri, bool live, const std::string& decoder) {
  std::lock_guard<std::mutex> lock(mutex_);
  source_counters_.emplace_back();
  source_counters_.back().uri = uri;
  source_counters_.back().decoder = decoder;
  source_counters_.back().live = live;
  return static_cast<int>(source_counters_.size()) - 1;
}

void Profiler::count_drop(int source, DropReason reason, int64_t n) {
  if (source < 0 || source >= static_cast<int>(source_counters_.size())) return;
  source_counters_[static_cast<size_t>(source)].drops[static_cast<size_t>(reason)] += n;
}

void Profiler::count_damaged(int source, int64_t n) {
  if (source < 0 || source >= static_cast<int>(source_counters_.size())) return;
  source_counters_[static_cast<size_t>(source)].damaged += n;
}

std::vector<SourceReport> Profiler::live_sources() const {
  std::lock_guard<std::mutex> lock(mutex_);  // sources are added before the run; the counters are atomics
  return source_reports();
}

// Each source's counters and, where the run has a health board, a live source's outages (or any
// source's that reconnected, Redis): a file that fails has no outage to report, its error says
// it all. The caller holds mutex_.
std::vector<SourceReport> Profiler::source_reports() const {
  const std::vector<SourceHealthSnapshot> board = health_ ? health_->snapshot() : std::vector<SourceHealthSnapshot>{};
  std::vector<SourceReport> out;
  for (size_t i = 0; i < source_counters_.size(); ++i) {
    const SourceCounters& c = source_counters_[i];
    SourceReport s;
    s.uri = c.uri;
    s.decoder = c.decoder;
    s.frame_path = c.frame_path;
    s.frames_read = c.read;
    s.frames_done = c.done;
    s.live = c.live;
    s.damaged = c.damaged;
    const int64_t live_tracks = c.live_tracks.load(std::memory_order_relaxed);
    s.tracked = live_tracks >= 0;
    s.live_tracks = std::max<int64_t>(0, live_tracks);
    s.track_ids_issued = std::max<int64_t>(0, c.track_ids.load(std::memory_order_relaxed));
    for (size_t d = 0; d < s.drops.size(); ++d) s.drops[d] = c.drops[d];
    if (i < board.size() && (c.live || board[i].reconnects > 0)) {
      s.outages = board[i].outages;
      s.reconnects = board[i].reconnects;
      s.outage_ms = board[i].outage_ms;
      s.frames_lost = board[i].frames_lost_to_outages;
    }
    out.push_back(s);
  }
  return out;
}

namespace {

double clock_ms(clockid_t clock) {
  timespec ts{};
  if (::clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

}  // namespace

double process_cpu_ms() { return clock_ms(CLOCK_PROCESS_CPUTIME_ID); }

std::vector<const StageRecorder*> Profiler::recorders() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<const StageRecorder*> out;
  for (const auto& r : recorders_) out.push_back(r.get());
  return out;
}

double thread_cpu_ms() { return clock_ms(CLOCK_THREAD_CPUTIME_ID); }

double thread_run_queue_ms() {
  std::ifstream in("/proc/thread-self/schedstat");
  unsigned long long on_cpu_ns = 0, waiting_ns = 0;
  if (!(in >> on_cpu_ns >> waiting_ns)) return -1;
  return static_cast<double>(waiting_ns) / 1e6;
}

namespace {

// Busy time (all but idle and iowait) of the CPUs this process may run on, by anyone, from
// /proc/stat; -1 where it cannot be read. The table shows what other processes took of the cores
// during the run (the verdict does not use it: a stage that sleeps or waits on I/O cannot be told
// from one starved of CPU by the busy times alone).
double cores_busy_ms() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
  std::ifstream in("/proc/stat");
  if (!in) return -1;
  const double ms_per_tick = 1000.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  double busy = 0;
  bool any = false;
  std::string line;
  while (std::getline(in, line)) {
    int cpu = -1;
    unsigned long long v[8] = {};
    if (std::sscanf(line.c_str(), "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1], &v[2], &v[3], &v[4],
                    &v[5], &v[6], &v[7]) < 9 || cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed))
      continue;
    busy += static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * ms_per_tick;  // user nice system irq softirq steal
    any = true;
  }
  return any ? busy : -1;
}

}  // namespace

void Profiler::start() {
  start_ = Clock::now();
  start_cpu_ms_ = process_cpu_ms();
  start_busy_ms_ = cores_busy_ms();
  if (gpu_device_ >= 0) {
    auto sampler = native::GpuBusySampler::start_nvml(static_cast<unsigned>(gpu_device_));
    if (sampler) gpu_busy_ = std::move(*sampler);
    else gpu_busy_note_ = sampler.error().message;
  }
}

void Profiler::stop() {
  stop_ = Clock::now();
  stop_cpu_ms_ = process_cpu_ms();
  stop_busy_ms_ = cores_busy_ms();
  if (gpu_busy_) {
    auto summary = gpu_busy_->stop();
    std::lock_guard<std::mutex> lock(mutex_);
    gpu_busy_final_ = summary;
    if (!gpu_busy_->error().empty()) gpu_busy_note_ = gpu_busy_->error();
  }
}

double Profiler::live_gpu_busy() const {
  if (!gpu_busy_) return -1;
  auto s = gpu_busy_->so_far();
  return s ? s->busy_ratio : -1;
}

ProfileReport Profiler::report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ProfileReport r;
  Clock::time_point end = stop_ == Clock::time_point{} ? Clock::now() : stop_;
  r.wall_ms = std::chrono::duration<double, std::milli>(end - start_).count();
  r.cpu_ms = std::max(0.0, (stop_cpu_ms_ >= 0 ? stop_cpu_ms_ : process_cpu_ms()) - start_cpu_ms_);
  r.cores = cpu_count();
  if (start_busy_ms_ >= 0) {
    const double end_busy = stop_busy_ms_ >= 0 ? stop_busy_ms_ : cores_busy_ms();
    if (end_busy >= start_busy_ms_) r.machine_busy_ms = end_busy - start_busy_ms_;
  }
  r.frames = frames_;
  r.workers = workers_;
  r.outputs = outputs_;
  r.sources = source_reports();
  r.corrupt_frames = 0;
  for (const SourceReport& s : r.sources) {
    for (size_t i = 0; i < s.drops.size(); ++i) r.drops[i] += s.drops[i];
    r.corrupt_frames += s.damaged;
  }
  r.corrupt_frames += r.drops[static_cast<size_t>(DropReason::kCorrupt)];
  LatencyHistogram latency;
  for (const auto& rec : recorders_) {
    latency.merge(rec->frame_latency());
    if (rec->run_queue_ms() >= 0) r.run_queue_ms = std::max(0.0, r.run_queue_ms) + rec->run_queue_ms();
  }
  r.latency_p50_ms = latency.percentile(0.50);
  r.latency_p90_ms = latency.percentile(0.90);
  r.latency_p99_ms = latency.percentile(0.99);
  r.latency_max_ms = latency.max_ms();
  r.latency_bins = latency.bins(40);

  for (int i = 0; i < kStageCount; ++i) {
    auto stage = static_cast<Stage>(i);
    LatencyHistogram merged;
    StageReport s;
    s.name = stage_name(stage);
    if (stage == Stage::kPreprocess) s.ran_on = preprocess_on_;
    if (stage == Stage::kPostprocess)
      s.ran_on = postprocess_left_gpu_.load(std::memory_order_relaxed) && postprocess_on_ != "cpu"
                     ? "cpu (after the decode on " + postprocess_on_ + " failed)"
                     : postprocess_on_;
    double cpu = 0;
    for (const auto& rec : recorders_) {
      const auto& d = rec->stage(stage);
      merged.merge(d.busy);
      s.items_in += d.items_in;
      s.items_out += d.items_out;
      s.drops += d.drops;
      s.wait_ms += d.wait_ms;
      s.blocked_ms += d.blocked_ms;
      cpu += d.cpu_ms;
      if (d.busy.count() > 0) ++s.threads;
    }
    s.hits = merged.count();
    s.cpu_ms = s.hits > 0 ? cpu : -1;
    s.total_ms = merged.total_ms();
    s.per_hit_ms = merged.mean_ms();
    s.percent_of_wall = r.wall_ms > 0 ? 100.0 * s.total_ms / r.wall_ms : 0;
    s.p50_ms = merged.percentile(0.50);
    s.p99_ms = merged.percentile(0.99);
    s.max_ms = merged.max_ms();
    s.utilization = (r.wall_ms > 0 && s.threads > 0) ? s.total_ms / (r.wall_ms * s.threads) : 0;
    if (stage == Stage::kInference && s.total_ms > 0)
      r.inference_fps = static_cast<double>(s.items_out) * 1000.0 / (s.total_ms / std::max(1, s.threads));
    r.stages.push_back(s);
  }
  if (r.wall_ms > 0) r.e2e_fps = static_cast<double>(r.frames) * 1000.0 / r.wall_ms;
  const std::optional<native::GpuBusySummary> busy = gpu_busy_final_ ? gpu_busy_final_ : gpu_busy_ ? gpu_busy_->so_far() : std::nullopt;
  if (busy) {
    r.gpu_busy = busy->busy_ratio;
    r.gpu_memory_busy = busy->memory_busy_ratio;
    r.gpu_memory_used_mb = static_cast<double>(busy->memory_used_max_bytes) / (1 << 20);
    r.gpu_busy_samples = busy->samples;
  }
  r.gpu_busy_note = gpu_busy_note_;
  r.verdict = bottleneck_verdict(r);
  return r;
}

// A run whose process used this share of its cores or more is CPU-bound.
constexpr double kCpuBoundShare = 0.9;
// Threads that waited this share of the wall time for a core (summed) are short of CPU, when the
// machine's cores are this busy (by anyone); whether the stages or others take them is told by
// what others use: this share of the cores or more, and the run is starved by them.
constexpr double kStarvedShare = 0.25;
constexpr double kBusyMachineShare = 0.8;
constexpr double kOthersShare = 0.25;

namespace {

// "source-bound", "inference-bound", ... with what the stage costs, in the words of the field.
std::string stage_bound_line(const ProfileReport& r, const StageReport& s) {
  char buf[512];
  const int busy = static_cast<int>(s.utilization * 100.0 + 0.5);
  const char* th = s.threads == 1 ? "" : "s";
  if (s.name == "read")
    std::snprintf(buf, sizeof buf, "decode-bound: reading and decoding take %.2f ms a frame (%d reader%s, %d%% busy)", s.per_hit_ms,
                  s.threads, th, busy);
  else if (s.name == "inference")
    std::snprintf(buf, sizeof buf, "inference-bound: %.2f ms a call (%d worker%s, %d%% busy)", s.per_hit_ms, s.threads, th, busy);
  else if (s.name == "postprocess")
    std::snprintf(buf, sizeof buf, "postprocess-bound: decoding the outputs and NMS take %.2f ms a frame (%d%% busy)", s.per_hit_ms, busy);
  else if (s.name == "write") {
    std::string outputs;
    for (const auto& o : r.outputs) outputs += (outputs.empty() ? "" : ", ") + o;
    std::snprintf(buf, sizeof buf, "writer-bound: writing %s takes %.2f ms a frame (%d%% busy)", outputs.empty() ? "the outputs" : outputs.c_str(),
                  s.per_hit_ms, busy);
  } else
    std::snprintf(buf, sizeof buf, "%s-bound: %.2f ms a frame (%d thread%s, %d%% busy)", s.name.c_str(), s.per_hit_ms, s.threads, th, busy);
  std::string line = buf;
  // A stage whose busy time is mostly off the CPU waits on something else: the disk, a device, a lock.
  if (s.cpu_ms >= 0 && s.total_ms > 0 && s.cpu_ms < 0.5 * s.total_ms) {
    std::snprintf(buf, sizeof buf, ", on the CPU only %d%% of that time (waiting on a disk, a device or a lock)",
                  static_cast<int>(100.0 * s.cpu_ms / s.total_ms + 0.5));
    line += buf;
  }
  return line;
}

}  // namespace

// The verdict names what limits the run, in this order: every core taken (CPU-bound, whatever
// stage looks busiest: a stage's busy time then includes waiting for a core); a live source that
// delivers fewer frames than the pipeline could take (source-bound); a saturated stage
// (decode-, inference-, postprocess-, writer-bound, with who waits on it); else the input.
namespace {

std::string verdict_of_the_stages(const ProfileReport& r);

// "; rtsp://cam/1 was down 10.2 s in 1 outage (255 frames lost)" for each source that had outages.
std::string outages_said(const ProfileReport& r) {
  std::string out;
  char buf[512];
  for (const auto& s : r.sources) {
    if (s.outages <= 0) continue;
    std::snprintf(buf, sizeof buf, "; %s was down %.1f s in %lld outage%s (%lld frames lost)", s.uri.c_str(), s.outage_ms / 1000.0,
                  static_cast<long long>(s.outages), s.outages == 1 ? "" : "s", static_cast<long long>(s.frames_lost));
    out += buf;
  }
  return out;
}

}  // namespace

// "; GPU busy 0.43 of the run: the host side is the bottleneck (...)" where it was measured.
static std::string gpu_busy_said(const ProfileReport& r) {
  if (r.gpu_busy < 0 || r.frames == 0) return "";
  native::GpuBusySummary s;
  s.busy_ratio = r.gpu_busy;
  return "; " + native::gpu_busy_sentence(s);
}

std::string bottleneck_verdict(const ProfileReport& r) { return verdict_of_the_stages(r) + gpu_busy_said(r) + outages_said(r); }

namespace {

std::string verdict_of_the_stages(const ProfileReport& r) {
  if (r.frames == 0 || r.wall_ms <= 0) return "no frame was processed";
  auto pct = [](double v) { return static_cast<int>(v * 100.0 + 0.5); };
  char buf[512];
  // The machine: our CPU time, the time our threads waited, runnable, for a core (the kernel's
  // run-queue delay: unlike busy times it tells waiting for a core from sleeping), and what other
  // processes took of the same cores, each in cores' worth over the run.
  const double cores_used = r.cpu_ms / r.wall_ms;
  const double waited = r.run_queue_ms > 0 ? r.run_queue_ms / r.wall_ms : 0;
  const double machine = r.machine_busy_ms >= 0 ? r.machine_busy_ms / r.wall_ms : cores_used;
  const double others = std::max(0.0, machine - cores_used);
  const bool contended = r.cores > 0 && waited >= kStarvedShare && machine >= kBusyMachineShare * r.cores;
  // Every core taken by the stages themselves (or nearly, with the threads queueing for one):
  // the busiest stage is only the largest share, and its busy time includes waiting for a core.
  if (r.cores > 0 && (cores_used >= kCpuBoundShare * r.cores || (contended && others < kOthersShare * r.cores))) {
    double busy = 0;
    for (const auto& s : r.stages) busy += s.total_ms;
    std::vector<const StageReport*> by_share;
    for (const auto& s : r.stages)
      if (s.total_ms > 0) by_share.push_back(&s);
    std::sort(by_share.begin(), by_share.end(), [](const StageReport* a, const StageReport* b) { return a->total_ms > b->total_ms; });
    const char* cores = r.cores == 1 ? "" : "s";
    if (waited >= 0.05)
      std::snprintf(buf, sizeof buf, "CPU-bound: the stages need %.1f of %d core%s (on a core %.1f, waiting for one %.1f; busy time:",
                    cores_used + waited, r.cores, cores, cores_used, waited);
    else
      std::snprintf(buf, sizeof buf, "CPU-bound: the stages need %.1f of %d core%s (busy time:", cores_used, r.cores, cores);
    std::string line = buf;
    for (size_t i = 0; i < by_share.size() && i < 3; ++i) {
      std::snprintf(buf, sizeof buf, "%s %s %d%%", i ? "," : "", by_share[i]->name.c_str(), pct(by_share[i]->total_ms / busy));
      line += buf;
    }
    return line + "); fewer threads or workers than cores, or a smaller input, would leave each stage a core";
  }
  // The cores are taken by other processes and the stages wait for one.
  if (contended) {
    std::snprintf(buf, sizeof buf,
                  "CPU-starved: other processes use %.1f of %d core%s and the stages' threads waited %.0f ms for a core "
                  "(%.1f cores' worth of the run): every stage looks slower than it is",
                  others, r.cores, r.cores == 1 ? "" : "s", r.run_queue_ms, waited);
    return buf;
  }
  // The busiest stage after reading: reading a live source is mostly waiting for its clock.
  const bool live = std::any_of(r.sources.begin(), r.sources.end(), [](const SourceReport& s) { return s.live; });
  const StageReport* busiest = nullptr;
  int busiest_index = -1;
  for (size_t i = 0; i < r.stages.size(); ++i) {
    const auto& s = r.stages[i];
    if (s.hits == 0 || (live && s.name == "read")) continue;
    if (!busiest || s.utilization > busiest->utilization) {
      busiest = &s;
      busiest_index = static_cast<int>(i);
    }
  }
  if (!busiest && !live) return "no stage recorded any work";
  const double read_fps = r.wall_ms > 0 ? [&] {
    int64_t read = 0;
    for (const auto& s : r.sources) read += s.frames_read;
    return static_cast<double>(read) * 1000.0 / r.wall_ms;
  }() : 0;
  const int64_t policy_drops = r.drops[static_cast<size_t>(DropReason::kPolicy)];
  // A live source the pipeline keeps up with (nothing dropped for the policy, no stage near
  // saturation) sets the pace: the camera's frame rate.
  if (live && (!busiest || (policy_drops == 0 && busiest->utilization < 0.85))) {
    std::snprintf(buf, sizeof buf, "source-bound: the source%s deliver%s %.1f fps and the pipeline keeps up", r.sources.size() == 1 ? "" : "s",
                  r.sources.size() == 1 ? "s" : "", read_fps);
    std::string line = buf;
    if (busiest) {
      std::snprintf(buf, sizeof buf, " (busiest stage: %s, %d%% busy)", busiest->name.c_str(), pct(busiest->utilization));
      line += buf;
    }
    return line;
  }
  // A reader held back by full queues is not waiting for input, however idle the others look.
  const StageReport* reader = nullptr;
  for (const auto& s : r.stages)
    if (s.name == "read" && s.hits > 0) reader = &s;
  const bool reader_held_back = reader && reader->blocked_ms >= 0.5 * r.wall_ms * std::max(1, reader->threads);
  if (busiest->utilization < 0.6 && !reader_held_back) {
    std::snprintf(buf, sizeof buf,
                  "input-bound: no stage is saturated (busiest: %s, %d%% busy): the pipeline waits for frames, which "
                  "arrive at %.1f fps",
                  busiest->name.c_str(), pct(busiest->utilization), read_fps);
    return buf;
  }
  std::string line = stage_bound_line(r, *busiest);
  auto ratio = [&](const StageReport& s, double ms) { return ms / (r.wall_ms * std::max(1, s.threads)); };
  // Who waits on whom: the nearest upstream stage blocked on its full output queue, and the
  // nearest downstream stage waiting for input.
  for (int i = busiest_index - 1; i >= 0; --i) {
    const auto& up = r.stages[static_cast<size_t>(i)];
    if (up.hits == 0 || up.blocked_ms <= 0) continue;
    std::snprintf(buf, sizeof buf, "; %s is blocked %d%% of the time on a full queue", up.name.c_str(),
                  pct(ratio(up, up.blocked_ms)));
    line += buf;
    break;
  }
  for (size_t i = static_cast<size_t>(busiest_index) + 1; i < r.stages.size(); ++i) {
    const auto& down = r.stages[i];
    if (down.hits == 0 || down.wait_ms <= 0) continue;
    std::snprintf(buf, sizeof buf, "; %s waits %d%% of the time for input", down.name.c_str(),
                  pct(ratio(down, down.wait_ms)));
    line += buf;
    break;
  }
  if (live && policy_drops > 0) {
    std::snprintf(buf, sizeof buf, "; the source delivers %.1f fps, %lld frames dropped to keep up", read_fps,
                  static_cast<long long>(policy_drops));
    line += buf;
  }
  return line;
}

}  // namespace

std::string format_profile(const ProfileReport& r) {
  std::string out;
  char line[320];
  std::snprintf(line, sizeof line, "%-12s %3s %7s %11s %9s %7s %9s %9s %10s %10s %7s %7s %6s\n", "Stage", "Thr", "Hits",
                "Total ms", "Per hit", "% Time", "p50 ms", "p99 ms", "Wait ms", "Blocked ms", "In", "Out", "Drops");
  out += line;
  out += std::string(120, '=') + "\n";
  for (const auto& s : r.stages) {
    if (s.hits == 0) continue;
    std::snprintf(line, sizeof line, "%-12s %3d %7lld %11.1f %9.3f %7.1f %9.3f %9.3f %10.1f %10.1f %7lld %7lld %6lld\n",
                  s.name.c_str(), s.threads, static_cast<long long>(s.hits), s.total_ms, s.per_hit_ms,
                  s.percent_of_wall, s.p50_ms, s.p99_ms, s.wait_ms, s.blocked_ms, static_cast<long long>(s.items_in),
                  static_cast<long long>(s.items_out), static_cast<long long>(s.drops));
    out += line;
  }
  out += std::string(120, '-') + "\n";
  // No ratio here: end-to-end against the engine alone is `streamdet bench`'s (the inference
  // stage's own rate inside the pipeline already pays for the CPU the other stages take).
  std::snprintf(line, sizeof line, "frames %lld in %.1f ms: end-to-end %.2f FPS | inference stage %.2f FPS in the pipeline",
                static_cast<long long>(r.frames), r.wall_ms, r.e2e_fps, r.inference_fps);
  out += line;
  if (r.cores > 0 && r.wall_ms > 0) {
    std::snprintf(line, sizeof line, " | CPU %.2f of %d core%s", r.cpu_ms / r.wall_ms, r.cores, r.cores == 1 ? "" : "s");
    out += line;
    if (r.machine_busy_ms > r.cpu_ms) {
      std::snprintf(line, sizeof line, " (other processes %.2f)", (r.machine_busy_ms - r.cpu_ms) / r.wall_ms);
      out += line;
    }
  }
  out += "\n";
  std::snprintf(line, sizeof line, "latency capture->output ms: p50 %.1f  p90 %.1f  p99 %.1f  max %.1f\n", r.latency_p50_ms,
                r.latency_p90_ms, r.latency_p99_ms, r.latency_max_ms);
  out += line;
  int64_t total_drops = 0;
  for (auto d : r.drops) total_drops += d;
  if (total_drops > 0) {
    out += "dropped:";
    for (int i = 0; i < kDropReasonCount; ++i)
      if (r.drops[static_cast<size_t>(i)] > 0) {
        std::snprintf(line, sizeof line, " %s %lld", drop_reason_name(static_cast<DropReason>(i)),
                      static_cast<long long>(r.drops[static_cast<size_t>(i)]));
        out += line;
      }
    out += "\n";
  }
  for (const auto& s : r.stages)
    if (!s.ran_on.empty() && s.ran_on != "cpu")
      out += s.name + ": on " + s.ran_on + (s.name == "postprocess" ? "\n" : " (its upload and kernel timed in inference)\n");
  for (const auto& s : r.sources) {
    // The decoder in the table when it is the GPU's (the JSON names it for every video source).
    if (s.decoder.rfind("nvdec", 0) == 0)
      out += "source " + s.uri + ": decoded by " + s.decoder + (s.frame_path.empty() ? "" : "; " + s.frame_path) + "\n";
    if (r.sources.size() > 1) {
      std::snprintf(line, sizeof line, "source %s: read %lld, done %lld\n", s.uri.c_str(),
                    static_cast<long long>(s.frames_read), static_cast<long long>(s.frames_done));
      out += line;
    }
    if (s.damaged > 0) {
      std::snprintf(line, sizeof line, "source %s: %lld frame%s decoded from data cut off or corrupt (processed; corrupt %lld in all)\n",
                    s.uri.c_str(), static_cast<long long>(s.damaged), s.damaged == 1 ? "" : "s",
                    static_cast<long long>(s.damaged + s.drops[static_cast<size_t>(DropReason::kCorrupt)]));
      out += line;
    }
    if (s.tracked) {
      std::snprintf(line, sizeof line, "source %s: tracks live at the end %lld, ids issued %lld\n", s.uri.c_str(),
                    static_cast<long long>(s.live_tracks), static_cast<long long>(s.track_ids_issued));
      out += line;
    }
    if (s.outages > 0) {
      std::snprintf(line, sizeof line, "source %s: %lld outages, %.1f s down, %lld reconnects, about %lld frames lost\n",
                    s.uri.c_str(), static_cast<long long>(s.outages), s.outage_ms / 1000.0, static_cast<long long>(s.reconnects),
                    static_cast<long long>(s.frames_lost));
      out += line;
    }
  }
  out += format_counting(r.counting);
  if (r.gpu_busy >= 0) {
    std::snprintf(line, sizeof line, "gpu: busy %.2f of the run (%d samples), memory busy %.2f, memory used at most %.0f MiB\n", r.gpu_busy,
                  r.gpu_busy_samples, r.gpu_memory_busy, r.gpu_memory_used_mb);
    out += line;
  } else if (!r.gpu_busy_note.empty()) {
    out += "gpu: busy share not measured: " + r.gpu_busy_note + "\n";
  }
  out += r.verdict + "\n";
  return out;
}

nlohmann::json profile_to_json(const ProfileReport& r) {
  nlohmann::json j;
  j["wall_ms"] = r.wall_ms;
  j["frames"] = r.frames;
  j["corrupt_frames"] = r.corrupt_frames;
  j["workers"] = r.workers;
  j["inference_fps"] = r.inference_fps;
  j["e2e_fps"] = r.e2e_fps;
  j["latency_ms"] = {{"p50", r.latency_p50_ms}, {"p90", r.latency_p90_ms}, {"p99", r.latency_p99_ms}, {"max", r.latency_max_ms}};
  j["cpu_ms"] = r.cpu_ms;
  j["cores"] = r.cores;
  j["machine_busy_ms"] = r.machine_busy_ms;
  j["run_queue_ms"] = r.run_queue_ms;
  j["outputs"] = r.outputs;
  j["verdict"] = r.verdict;
  // The GPU's busy share (0..1, NVML), null where not measured (with the reason where a GPU ran).
  j["gpu_busy"] = r.gpu_busy >= 0 ? nlohmann::json(r.gpu_busy) : nlohmann::json(nullptr);
  if (r.gpu_busy >= 0) {
    j["gpu_memory_busy"] = r.gpu_memory_busy;
    j["gpu_memory_used_mb"] = r.gpu_memory_used_mb;
    j["gpu_busy_samples"] = r.gpu_busy_samples;
  }
  if (!r.gpu_busy_note.empty()) j["gpu_busy_note"] = r.gpu_busy_note;
  if (!r.counting.empty()) j["counting"] = counting_to_json(r.counting);
  nlohmann::json drops = nlohmann::json::object();
  for (int i = 0; i < kDropReasonCount; ++i) drops[drop_reason_name(static_cast<DropReason>(i))] = r.drops[static_cast<size_t>(i)];
  j["drops"] = drops;
  j["stages"] = nlohmann::json::array();
  for (const auto& s : r.stages) {
    j["stages"].push_back({{"stage", s.name},
                           {"threads", s.threads},
                           {"hits", s.hits},
                           {"items_in", s.items_in},
                           {"items_out", s.items_out},
                           {"drops", s.drops},
                           {"total_ms", s.total_ms},
                           {"per_hit_ms", s.per_hit_ms},
                           {"percent_of_wall", s.percent_of_wall},
                           {"p50_ms", s.p50_ms},
                           {"p99_ms", s.p99_ms},
                           {"max_ms", s.max_ms},
                           {"wait_ms", s.wait_ms},
                           {"blocked_ms", s.blocked_ms},
                           {"utilization", s.utilization},
                           {"cpu_ms", s.cpu_ms}});
    if (!s.ran_on.empty()) j["stages"].back()["ran_on"] = s.ran_on;
  }
  j["sources"] = nlohmann::json::array();
  for (const auto& s : r.sources) {
    nlohmann::json sd = nlohmann::json::object();
    for (int i = 0; i < kDropReasonCount; ++i) sd[drop_reason_name(static_cast<DropReason>(i))] = s.drops[static_cast<size_t>(i)];
    nlohmann::json source = {{"uri", s.uri},
                             {"live", s.live},
                             {"frames_read", s.frames_read},
                             {"frames_done", s.frames_done},
                             {"drops", sd},
                             {"corrupt_frames", s.drops[static_cast<size_t>(DropReason::kCorrupt)] + s.damaged},
                             {"damaged_frames", s.damaged}};
    if (!s.decoder.empty()) source["decoder"] = s.decoder;
    if (!s.frame_path.empty()) source["frame_path"] = s.frame_path;
    if (s.outages > 0) {
      source["outages"] = s.outages;
      source["reconnects"] = s.reconnects;
      source["outage_ms"] = s.outage_ms;
      source["frames_lost"] = s.frames_lost;
    }
    if (s.tracked) {
      source["live_tracks"] = s.live_tracks;
      source["track_ids_issued"] = s.track_ids_issued;
    }
    j["sources"].push_back(source);
  }
  return j;
}

}  // namespace sd
