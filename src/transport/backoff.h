// How long to wait before the next attempt to reach a server that went away: 50 ms, doubling
// after each failure, up to a cap (2 s), back to the start after a success. It only says how
// long; the caller waits (on something a stop request can cut short, rather than a bare sleep).
#pragma once

#include <algorithm>
#include <chrono>

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

}  // namespace sd::transport
