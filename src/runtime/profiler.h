// The always-on profiler. Each thread records into its own StageRecorder (no lock on the hot
// path); report() merges them into the per-stage table the user sees at exit: hits, total,
// per hit, % of wall time, p50, p99, plus inference FPS next to end-to-end FPS.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/frame.h"
#include "runtime/latency_histogram.h"

namespace sd {

enum class Stage : int { kRead, kPreprocess, kInference, kPostprocess, kDraw, kWrite };
inline constexpr int kStageCount = 6;
const char* stage_name(Stage stage);

// Per-thread recorder. Only its owning thread writes to it while the run is going.
class StageRecorder {
 public:
  explicit StageRecorder(std::string thread_name) : thread_name_(std::move(thread_name)) {}
  void add(Stage stage, double ms, int64_t items = 1) {
    auto& s = stages_[static_cast<size_t>(stage)];
    s.latency.add(ms);
    s.items += items;
  }
  const std::string& thread_name() const { return thread_name_; }

  struct StageData {
    LatencyHistogram latency;  // one sample per call (a batch counts once)
    int64_t items = 0;         // frames handled (a batch of 4 adds 4)
  };
  const StageData& stage(Stage s) const { return stages_[static_cast<size_t>(s)]; }

 private:
  std::string thread_name_;
  std::array<StageData, kStageCount> stages_{};
};

// Times a scope into a recorder.
class ScopedStage {
 public:
  ScopedStage(StageRecorder& recorder, Stage stage, int64_t items = 1)
      : recorder_(recorder), stage_(stage), items_(items), begin_(Clock::now()) {}
  ~ScopedStage() {
    recorder_.add(stage_, std::chrono::duration<double, std::milli>(Clock::now() - begin_).count(), items_);
  }
  ScopedStage(const ScopedStage&) = delete;
  ScopedStage& operator=(const ScopedStage&) = delete;

 private:
  StageRecorder& recorder_;
  Stage stage_;
  int64_t items_;
  Clock::time_point begin_;
};

struct StageReport {
  std::string name;
  int64_t hits = 0;
  int64_t items = 0;
  double total_ms = 0, per_hit_ms = 0, percent_of_wall = 0, p50_ms = 0, p99_ms = 0, max_ms = 0;
};

struct ProfileReport {
  std::vector<StageReport> stages;
  double wall_ms = 0;
  int64_t frames = 0;          // frames that reached the sinks
  int64_t corrupt_frames = 0;  // skipped because they could not be decoded
  double inference_fps = 0;    // frames per second of inference time alone
  double e2e_fps = 0;          // frames per second of wall time
};

class Profiler {
 public:
  // Registers a recorder for the calling thread; the Profiler owns it.
  StageRecorder& make_recorder(const std::string& thread_name);
  void start() { start_ = Clock::now(); }
  void stop() { stop_ = Clock::now(); }
  void count_frame_done(int64_t n = 1) { frames_ += n; }
  void count_corrupt_frame() { ++corrupt_; }
  // Merges all recorders; call after the threads that write them have stopped.
  ProfileReport report() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<StageRecorder>> recorders_;
  Clock::time_point start_{}, stop_{};
  int64_t frames_ = 0;
  int64_t corrupt_ = 0;
};

// The table printed at exit (the line-profiler layout of the seeds, for the whole pipeline).
std::string format_profile(const ProfileReport& report);
nlohmann::json profile_to_json(const ProfileReport& report);

}  // namespace sd
