// Bounds the drain after a stop request (Ctrl-C, SIGTERM): frames in flight are finished for at
// most `timeout` after the request, then `cut` is called (the run drops what is left; a Redis
// source leaves those entries pending for another worker). Watches from its own thread, in steps
// of 10 ms, from construction until destruction (the end of the run).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace sd {

class DrainDeadline {
 public:
  DrainDeadline(std::chrono::milliseconds timeout, std::function<bool()> stop_requested, std::function<void()> cut);
  ~DrainDeadline();
  DrainDeadline(const DrainDeadline&) = delete;
  DrainDeadline& operator=(const DrainDeadline&) = delete;

 private:
  void watch();

  const std::chrono::milliseconds timeout_;
  const std::function<bool()> stop_requested_;
  const std::function<void()> cut_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;  // last: started once the rest is in place
};

}  // namespace sd
