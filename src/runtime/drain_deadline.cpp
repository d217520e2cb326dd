#include "runtime/drain_deadline.h"

#include <optional>

namespace sd {

DrainDeadline::DrainDeadline(std::chrono::milliseconds timeout, std::function<bool()> stop_requested, std::function<void()> cut)
    : timeout_(timeout), stop_requested_(std::move(stop_requested)), cut_(std::move(cut)), thread_([this] { watch(); }) {}

DrainDeadline::~DrainDeadline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void DrainDeadline::watch() {
  constexpr auto kStep = std::chrono::milliseconds(10);
  std::unique_lock<std::mutex> lock(mutex_);
  std::optional<std::chrono::steady_clock::time_point> deadline;
  while (!wake_.wait_for(lock, kStep, [&] { return done_; })) {
    const auto now = std::chrono::steady_clock::now();
    if (!deadline && stop_requested_()) deadline = now + timeout_;
    if (deadline && now >= *deadline) {
      cut_();
      return;
    }
  }
}

}  // namespace sd
