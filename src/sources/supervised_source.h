// A live source that stays up: wraps the source (an RTSP/HTTP stream, a camera, a GStreamer
// pipeline) and, when it stalls (no frame for --stall-timeout), breaks or ends, reopens it with
// exponential back-off and jitter until it delivers again, for ever or for --reconnect-for.
// Frame indices and timestamps keep counting across reconnects (outputs and consumers that dedupe
// on (source, index) see one stream).
// The health board is told of the outage, the back-off, the reconnect and the frames lost.
//
// The wrapped source's read() must come back within about the stall timeout and soon after a
// stop request (SourceOptions::stall_timeout_ms, should_stop): the supervisor cannot interrupt
// a read that blocks, it only decides what to do when it returns.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <string>

#include "runtime/source_health.h"
#include "sources/source.h"
#include "transport/backoff.h"

namespace sd {

struct SupervisorOptions {
  std::chrono::milliseconds stall_timeout{5000};   // a read that times out after this is a stall
  std::chrono::milliseconds reconnect_for{0};      // give up after this long down; 0: never give up
  std::chrono::milliseconds backoff_initial{250};  // the first wait before reopening
  std::chrono::milliseconds backoff_cap{5000};     // the longest wait (a camera back is seen within it)
  double jitter = 0.25;                            // each wait is shortened by up to this fraction
  uint32_t seed = 0;                               // of the jitter; 0: from the clock
};

// The wait before the next attempt: `backoff`'s next delay less a random share of up to `jitter`
// of it (so that many cameras behind one switch that went down do not all retry at once).
std::chrono::milliseconds jittered_delay(transport::Backoff& backoff, double jitter, std::mt19937& rng);

class SupervisedSource final : public Source {
 public:
  using Reopen = std::function<Result<std::unique_ptr<Source>>()>;

  // `inner`: the source, opened once already (a source that cannot be opened at the start fails
  // the run: a mistyped URL is not an outage). `reopen` opens it again.
  SupervisedSource(std::unique_ptr<Source> inner, Reopen reopen, SupervisorOptions options, const SourceOptions& source);
  const SourceInfo& info() const override { return info_; }
  Result<bool> read(Frame& frame) override;
  std::optional<std::string> damage() const override;
  void prefer_size(cv::Size network_input) override;
  bool keep_frames_on_device(int cuda_device, std::string& why_not) override;
  // The time the last read spent down (the read that stalled or broke, the back-off, reopening):
  // waiting for the source, not the reader's work. settle() and close() are not passed on: the
  // live sources it wraps acknowledge nothing, and their source may be replaced while a frame is
  // settled on another thread.
  double last_read_idle_ms() const override { return idle_ms_; }

 private:
  // Down: waits (back-off) and reopens until a source is open again, the run stops (false), or
  // --reconnect-for is over (an error).
  Result<bool> reconnect();
  bool stopping() const { return should_stop_ && should_stop_(); }
  void went_down(SourceState state, const std::string& why);
  // The first frame after an outage: the frames lost are counted, the back-off starts over.
  void back_up();

  std::unique_ptr<Source> inner_;
  Reopen reopen_;
  SupervisorOptions options_;
  SourceInfo info_;
  SourceHealth* health_ = nullptr;
  std::function<bool()> should_stop_;
  transport::Backoff backoff_;
  std::mt19937 rng_;
  std::optional<cv::Size> network_input_;
  std::optional<int> device_;  // keep_frames_on_device() was asked for this CUDA device
  int64_t index_offset_ = 0;  // added to the inner source's frame index (it counts from 0 on each open)
  int64_t next_index_ = 0;    // one past the last index handed out
  Clock::time_point opened_{};         // when the source was first opened: frames' timestamps count from it
  Clock::time_point last_frame_{};     // when the last frame came (or the source was first opened)
  Clock::time_point down_since_{};     // when the current outage began
  std::string last_why_;               // why the current outage began
  bool down_ = false;
  double idle_ms_ = 0;  // of the last read
};

// The supervisor as the run's options ask for it (SourceOptions: stall timeout, reconnect-for).
std::unique_ptr<Source> supervise(std::unique_ptr<Source> inner, SupervisedSource::Reopen reopen, const SourceOptions& options);

}  // namespace sd
