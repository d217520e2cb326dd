// How long to wait before the next attempt to reach a server that went away: 50 ms, doubling
// after each failure, up to a cap (2 s), back to the start after a success. It only says how
// long; the caller waits, with wait_unless_stopped() or on something else a stop request can cut
// short, rather than a bare sleep.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

namespace sd::transport {

class Backoff {
 public:
  using ms = std::chrono::milliseconds;

  explicit Backoff(ms initial = ms(50), ms cap = ms(2000)) : initial_(std::max(initial, ms(1))), cap_(std::max(cap, initial_)) {}

  // The delay before the next attempt; each call doubles the one after, up to the cap.
  ms next() {
    const ms delay = next_.count() ? next_ : initial_;
    next_ = std::min(delay * 2, cap_);
    ++failures_;
    return delay;
  }
  // After a success: the next failure waits `initial` again.
  void reset() {
    next_ = ms(0);
    failures_ = 0;
  }
  // Failures since the last success (how many times next() was called).
  int failures() const { return failures_; }

 private:
  ms initial_, cap_;
  ms next_{0};
  int failures_ = 0;
};

// Waits `d` in slices of `slice`, looking at `should_stop` (may be empty) before each: true when
// the whole wait passed, false as soon as a stop is requested.
inline bool wait_unless_stopped(std::chrono::milliseconds d, const std::function<bool()>& should_stop,
                                std::chrono::milliseconds slice) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (!(should_stop && should_stop())) {
    const auto left = until - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, slice));
  }
  return false;
}

}  // namespace sd::transport
