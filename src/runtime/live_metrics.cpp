#include "runtime/live_metrics.h"

#include <algorithm>

namespace sd {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

int64_t to_ns(double ms) { return static_cast<int64_t>(std::max(0.0, ms) * 1e6); }

size_t bucket_of(double ms) {
  const double seconds = ms / 1000.0;
  const auto& b = LiveMetrics::kBucketSeconds;
  return static_cast<size_t>(std::lower_bound(b.begin(), b.end(), seconds) - b.begin());  // le: upper bound inclusive
}

}  // namespace

void LiveMetrics::add(Stage stage, double ms, int64_t items) {
  auto& s = stages_[static_cast<size_t>(stage)];
  s.buckets[bucket_of(ms)].fetch_add(1, kRelaxed);
  s.items.fetch_add(items, kRelaxed);
  s.busy_ns.fetch_add(to_ns(ms), kRelaxed);
}

void LiveMetrics::add_wait(Stage stage, double ms) { stages_[static_cast<size_t>(stage)].wait_ns.fetch_add(to_ns(ms), kRelaxed); }

void LiveMetrics::add_blocked(Stage stage, double ms) {
  stages_[static_cast<size_t>(stage)].blocked_ns.fetch_add(to_ns(ms), kRelaxed);
}

void LiveMetrics::add_thread(Stage stage) { stages_[static_cast<size_t>(stage)].threads.fetch_add(1, kRelaxed); }

LiveMetrics::Snapshot LiveMetrics::snapshot() const {
  Snapshot out;
  for (size_t i = 0; i < stages_.size(); ++i) {
    const auto& s = stages_[i];
    auto& o = out[i];
    // The calls are the buckets' total, so a histogram's _count always equals its +Inf bucket.
    int64_t total = 0;
    for (size_t b = 0; b < kBuckets; ++b) total += (o.buckets[b] = s.buckets[b].load(kRelaxed));
    o.calls = total;
    o.items = s.items.load(kRelaxed);
    o.busy_ms = static_cast<double>(s.busy_ns.load(kRelaxed)) / 1e6;
    o.wait_ms = static_cast<double>(s.wait_ns.load(kRelaxed)) / 1e6;
    o.blocked_ms = static_cast<double>(s.blocked_ns.load(kRelaxed)) / 1e6;
    o.threads = s.threads.load(kRelaxed);
  }
  return out;
}

}  // namespace sd
