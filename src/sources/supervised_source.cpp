#include "sources/supervised_source.h"

#include <algorithm>
#include <cmath>

#include "core/log.h"
#include "runtime/source_health.h"

namespace sd {

namespace {

using ms = std::chrono::milliseconds;

// How often a wait looks at the stop request: well inside the second Ctrl-C is allowed.
constexpr ms kWaitSlice{50};

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string seconds_text(Clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", seconds(d));
  return buf;
}

}  // namespace

ms jittered_delay(transport::Backoff& backoff, double jitter, std::mt19937& rng) {
  const ms delay = backoff.next();
  const double share = std::clamp(jitter, 0.0, 1.0);
  if (share <= 0) return delay;
  std::uniform_real_distribution<double> cut(0.0, share);
  return ms(std::max<int64_t>(1, static_cast<int64_t>(std::llround(static_cast<double>(delay.count()) * (1.0 - cut(rng))))));
}

SupervisedSource::SupervisedSource(std::unique_ptr<Source> inner, Reopen reopen, SupervisorOptions options, const SourceOptions& source)
    : inner_(std::move(inner)),
      reopen_(std::move(reopen)),
      options_(options),
      info_(inner_->info()),
      health_(source.health),
      should_stop_(source.should_stop),
      backoff_(options.backoff_initial, options.backoff_cap),
      rng_(options.seed ? options.seed : static_cast<uint32_t>(Clock::now().time_since_epoch().count())),
      opened_(Clock::now()),
      last_frame_(opened_) {}

void SupervisedSource::prefer_size(cv::Size network_input) {
  network_input_ = network_input;
  if (inner_) inner_->prefer_size(network_input);
}

bool SupervisedSource::keep_frames_on_device(int cuda_device, std::string& why_not) {
  device_ = cuda_device;  // asked again of each reopened source
  return inner_ && inner_->keep_frames_on_device(cuda_device, why_not);
}

std::optional<std::string> SupervisedSource::damage() const { return inner_ ? inner_->damage() : std::nullopt; }

void SupervisedSource::went_down(SourceState state, const std::string& why) {
  if (health_) health_->outage(state, why);
  if (!down_) {
    down_ = true;
    down_since_ = Clock::now();
    last_why_ = why;
    // The reason names the source as a rule; said once either way.
    const std::string what = why.find(info_.uri) != std::string::npos ? why : info_.uri + ": " + why;
    log_warn("%s; reconnecting", what.c_str());
  }
  // The frames the stream's last open counted are behind us: the next open counts from 0 again.
  index_offset_ = next_index_;
  inner_.reset();
}

Result<bool> SupervisedSource::read(Frame& frame) {
  idle_ms_ = 0;
  auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  while (true) {
    if (stopping()) return false;
    if (!inner_) {
      const Clock::time_point reconnecting = Clock::now();
      auto back = reconnect();
      idle_ms_ += ms_since(reconnecting);
      if (!back || !*back) return back;
    }
    const Clock::time_point began = Clock::now();
    Result<bool> got = inner_->read(frame);
    if (got && *got) {
      frame.index += index_offset_;
      next_index_ = std::max(next_index_, frame.index + 1);
      // Each opening times its frames from itself; the run's frames are timed from the first.
      frame.timestamp_ms = std::chrono::duration<double, std::milli>(frame.capture_time - opened_).count();
      if (down_) back_up();
      last_frame_ = Clock::now();
      if (info_.width == 0) info_ = inner_->info();
      return true;
    }
    if (!got && got.error().code == ErrorCode::kCorruptFrame) {
      // One frame the decoder could not make: skipped by the reader, the stream goes on.
      frame.index += index_offset_;
      next_index_ = std::max(next_index_, frame.index + 1);
      return got;
    }
    // A read that ends or fails because the run is stopping is the end, not an outage.
    if (stopping()) return false;
    // A read that came back empty-handed after the stall timeout is a stall; anything else that
    // ended or broke the stream is an outage of its own kind (the reason says which).
    const bool stalled = Clock::now() - began >= options_.stall_timeout;
    idle_ms_ += ms_since(began);
    const std::string why = got ? "the stream ended" : got.error().message;
    went_down(stalled ? SourceState::kStalled : SourceState::kBackoff, why);
  }
}

Result<bool> SupervisedSource::reconnect() {
  while (true) {
    const Clock::duration down_for = Clock::now() - down_since_;
    if (options_.reconnect_for.count() > 0 && down_for >= options_.reconnect_for)
      return fail(ErrorCode::kSource, info_.uri + " stayed down for " + seconds_text(down_for) + " (--reconnect-for) after " +
                                          std::to_string(backoff_.failures()) + " attempts to reconnect; the outage began with: " +
                                          last_why_);
    if (health_) health_->set_state(SourceState::kBackoff);
    ms delay = jittered_delay(backoff_, options_.jitter, rng_);
    // No point waiting past the give-up time to make one more attempt after it.
    if (options_.reconnect_for.count() > 0)
      delay = std::min(delay, std::chrono::duration_cast<ms>(options_.reconnect_for - down_for) + ms(1));
    if (!transport::wait_unless_stopped(delay, should_stop_, kWaitSlice)) return false;
    if (health_) health_->set_state(SourceState::kConnecting);
    auto reopened = reopen_();
    if (stopping()) return false;
    if (!reopened) {
      if (health_) health_->outage(SourceState::kBackoff, reopened.error().message);
      if (log_verbose()) log_info("%s: reconnect attempt %d failed: %s", info_.uri.c_str(), backoff_.failures(), reopened.error().message.c_str());
      continue;
    }
    // Open again; the outage (and its back-off, and --reconnect-for) lasts until a frame comes:
    // a source that opens and drops at once again and again is down, however often it opens.
    inner_ = std::move(*reopened);
    if (network_input_) inner_->prefer_size(*network_input_);
    if (std::string why_not; device_) inner_->keep_frames_on_device(*device_, why_not);
    if (health_) health_->count_reconnect();
    return true;
  }
}

void SupervisedSource::back_up() {
  const Clock::time_point now = Clock::now();
  const double fps = inner_->info().fps > 0 ? inner_->info().fps : info_.fps;
  // Frames the camera made while we could not see them: its rate over the time since the last
  // frame we got, less the one interval that would have passed anyway.
  const int64_t lost = fps > 0 ? std::max<int64_t>(0, std::llround(seconds(now - last_frame_) * fps) - 1) : 0;
  if (health_ && lost > 0) health_->add_lost_frames(lost);
  log_info("%s: back after %s (about %lld frames lost)", info_.uri.c_str(), seconds_text(now - down_since_).c_str(),
           static_cast<long long>(lost));
  backoff_.reset();
  down_ = false;
}

std::unique_ptr<Source> supervise(std::unique_ptr<Source> inner, SupervisedSource::Reopen reopen, const SourceOptions& options) {
  SupervisorOptions so;
  so.stall_timeout = ms(std::llround(options.stall_timeout_ms));
  so.reconnect_for = ms(std::llround(options.reconnect_for_ms));
  return std::make_unique<SupervisedSource>(std::move(inner), std::move(reopen), so, options);
}

}  // namespace sd
