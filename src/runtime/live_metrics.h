// The profiler's live figures: what the web view and /metrics read while the run goes. The
// per-thread StageRecorders are merged only after their threads stop (no locks on the hot path),
// so every recorder also adds each call here: per stage a fixed-bucket latency histogram and
// running totals, all relaxed atomics (a few uncontended increments per frame: negligible). A
// reader may see one counter a call ahead of another; each figure on its own is exact.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace sd {

enum class Stage : int;
inline constexpr int kLiveStageCount = 7;  // = kStageCount (profiler.h)

class LiveMetrics {
 public:
  // Upper bounds of the histogram's buckets, in seconds (Prometheus' le); one more bucket, +Inf.
  static constexpr std::array<double, 14> kBucketSeconds{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                         0.1,    0.25,  0.5,    1.0,   2.5,   5.0,   10.0};
  static constexpr size_t kBuckets = kBucketSeconds.size() + 1;

  void add(Stage stage, double ms, int64_t items);
  void add_wait(Stage stage, double ms);
  void add_blocked(Stage stage, double ms);
  void add_thread(Stage stage);  // a thread ran this stage for the first time

  struct StageSnapshot {
    std::array<int64_t, kBuckets> buckets{};  // calls per bucket (not cumulative); the last is +Inf
    int64_t calls = 0;
    int64_t items = 0;   // frames handled (a batch of 4 adds 4)
    double busy_ms = 0, wait_ms = 0, blocked_ms = 0;
    int threads = 0;
  };
  using Snapshot = std::array<StageSnapshot, kLiveStageCount>;
  Snapshot snapshot() const;

 private:
  struct StageCounters {
    std::array<std::atomic<int64_t>, kBuckets> buckets{};
    std::atomic<int64_t> items{0}, busy_ns{0}, wait_ns{0}, blocked_ns{0};
    std::atomic<int> threads{0};
  };
  std::array<StageCounters, kLiveStageCount> stages_{};
};

}  // namespace sd
