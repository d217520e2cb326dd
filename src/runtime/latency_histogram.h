// Fixed-size log-bucketed histogram of durations: constant memory however long the run,
// percentiles within ~1% (bucket ratio 1.02), O(1) insert with no allocation.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace sd {

struct HistogramBin {
  double lo_ms = 0, hi_ms = 0;
  int64_t count = 0;
};

class LatencyHistogram {
 public:
  static constexpr double kMinMs = 1e-4;   // 0.1 us
  static constexpr double kRatio = 1.02;
  static constexpr int kBuckets = 1100;    // up to ~kMinMs * 1.02^1100 = 2.8e5 s

  void add(double ms);
  void merge(const LatencyHistogram& other);
  int64_t count() const { return count_; }
  double total_ms() const { return total_ms_; }
  double max_ms() const { return max_ms_; }
  double min_ms() const { return count_ ? min_ms_ : 0; }
  double mean_ms() const { return count_ ? total_ms_ / static_cast<double>(count_) : 0; }
  // q in [0, 1]; the geometric middle of the bucket holding the q-th sample, clamped to [min, max].
  double percentile(double q) const;
  // The distribution in at most `max_bins` bins of equal width on a log scale from min to max
  // (for a picture; empty when there is no sample).
  std::vector<HistogramBin> bins(int max_bins) const;

 private:
  std::array<int64_t, kBuckets> buckets_{};
  int64_t count_ = 0;
  double total_ms_ = 0;
  double max_ms_ = 0;
  double min_ms_ = 1e300;
};

}  // namespace sd
