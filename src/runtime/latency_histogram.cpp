#include "runtime/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace sd {

namespace {
const double kLogRatio = std::log(LatencyHistogram::kRatio);

int bucket_of(double ms) {
  if (!(ms > LatencyHistogram::kMinMs)) return 0;
  int b = static_cast<int>(std::log(ms / LatencyHistogram::kMinMs) / kLogRatio) + 1;
  return std::min(b, LatencyHistogram::kBuckets - 1);
}
}  // namespace

void LatencyHistogram::add(double ms) {
  if (!(ms >= 0)) ms = 0;
  ++buckets_[static_cast<size_t>(bucket_of(ms))];
  ++count_;
  total_ms_ += ms;
  max_ms_ = std::max(max_ms_, ms);
  min_ms_ = std::min(min_ms_, ms);
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (int i = 0; i < kBuckets; ++i) buckets_[static_cast<size_t>(i)] += other.buckets_[static_cast<size_t>(i)];
  count_ += other.count_;
  total_ms_ += other.total_ms_;
  max_ms_ = std::max(max_ms_, other.max_ms_);
  min_ms_ = std::min(min_ms_, other.min_ms_);
}

double LatencyHistogram::percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The rank of the sample, 1-based (nearest-rank definition).
  auto rank = static_cast<int64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::max<int64_t>(rank, 1);
  int64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets_[static_cast<size_t>(i)];
    if (seen >= rank) {
      if (i == 0) return min_ms();
      // Bucket i holds (kMinMs * r^(i-1), kMinMs * r^i].
      double lo = kMinMs * std::pow(kRatio, i - 1), hi = lo * kRatio;
      return std::clamp(std::sqrt(lo * hi), min_ms(), max_ms_);
    }
  }
  return max_ms_;
}

std::vector<HistogramBin> LatencyHistogram::bins(int max_bins) const {
  std::vector<HistogramBin> out;
  if (count_ == 0 || max_bins < 1) return out;
  const double lo = std::max(min_ms(), kMinMs), hi = std::max(max_ms_, lo * 1.0001);
  const int n = std::max(1, std::min(max_bins, static_cast<int>(std::ceil(std::log(hi / lo) / kLogRatio)) + 1));
  const double step = std::log(hi / lo) / n;
  out.resize(static_cast<size_t>(n));
  for (int b = 0; b < n; ++b) {
    out[static_cast<size_t>(b)].lo_ms = lo * std::exp(step * b);
    out[static_cast<size_t>(b)].hi_ms = lo * std::exp(step * (b + 1));
  }
  for (int i = 0; i < kBuckets; ++i) {
    const int64_t c = buckets_[static_cast<size_t>(i)];
    if (c == 0) continue;
    // The fine bucket's middle, clamped into [min, max] like percentile() does.
    const double mid = i == 0 ? lo : std::clamp(kMinMs * std::pow(kRatio, i - 0.5), lo, hi);
    const int b = std::clamp(static_cast<int>(std::log(mid / lo) / step), 0, n - 1);
    out[static_cast<size_t>(b)].count += c;
  }
  return out;
}

}  // namespace sd
