#include "runtime/source_health.h"

#include "core/frame.h"

namespace sd {

const char* source_state_name(SourceState state) {
  switch (state) {
    case SourceState::kConnecting: return "connecting";
    case SourceState::kLive: return "live";
    case SourceState::kStalled: return "stalled";
    case SourceState::kBackoff: return "backoff";
    case SourceState::kEnded: return "ended";
    case SourceState::kFailed: return "failed";
  }
  return "unknown";
}

bool source_state_is_up(SourceState state) {
  return state == SourceState::kConnecting || state == SourceState::kLive || state == SourceState::kEnded;
}

SourceHealth::SourceHealth(std::string uri) {
  s_.uri = std::move(uri);
  s_.state_since_wall_us = wall_now_us();
}

void SourceHealth::end_outage(int64_t now) {
  if (outage_began_us_ == 0) return;
  s_.outage_ms += static_cast<double>(now - outage_began_us_) / 1000.0;
  outage_began_us_ = 0;
}

void SourceHealth::enter(SourceState state, int64_t now) {
  if (s_.state == state) return;
  s_.state = state;
  s_.state_since_wall_us = now;
}

void SourceHealth::frame_arrived() {
  const int64_t now = wall_now_us();
  std::lock_guard lock(mutex_);
  ++s_.frames;
  s_.last_frame_wall_us = now;
  end_outage(now);
  enter(SourceState::kLive, now);
}

void SourceHealth::outage(SourceState state, const std::string& why) {
  const int64_t now = wall_now_us();
  std::lock_guard lock(mutex_);
  if (outage_began_us_ == 0) {
    outage_began_us_ = now;
    ++s_.outages;
  }
  s_.last_error = why;
  enter(state, now);
}

void SourceHealth::set_state(SourceState state) {
  const int64_t now = wall_now_us();
  std::lock_guard lock(mutex_);
  // An outage ends with the source: the time down is counted up to here.
  if (state == SourceState::kEnded || state == SourceState::kFailed) end_outage(now);
  enter(state, now);
}

void SourceHealth::count_reconnect() {
  std::lock_guard lock(mutex_);
  ++s_.reconnects;
}

void SourceHealth::recovered() {
  const int64_t now = wall_now_us();
  std::lock_guard lock(mutex_);
  ++s_.reconnects;
  end_outage(now);
  enter(SourceState::kLive, now);
}

void SourceHealth::add_lost_frames(int64_t n) {
  std::lock_guard lock(mutex_);
  s_.frames_lost_to_outages += n;
}

SourceHealthSnapshot SourceHealth::snapshot() const {
  const int64_t now = wall_now_us();
  std::lock_guard lock(mutex_);
  SourceHealthSnapshot copy = s_;
  copy.in_outage = outage_began_us_ != 0;
  if (copy.in_outage) copy.outage_ms += static_cast<double>(now - outage_began_us_) / 1000.0;
  return copy;
}

SourceHealth& HealthBoard::add(const std::string& uri) {
  std::lock_guard lock(mutex_);
  return slots_.emplace_back(uri);
}

size_t HealthBoard::size() const {
  std::lock_guard lock(mutex_);
  return slots_.size();
}

SourceHealth& HealthBoard::at(size_t i) {
  std::lock_guard lock(mutex_);
  return slots_.at(i);
}

std::vector<SourceHealthSnapshot> HealthBoard::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<SourceHealthSnapshot> out;
  out.reserve(slots_.size());
  for (const auto& s : slots_) out.push_back(s.snapshot());
  return out;
}

const char* HealthBoard::overall(const std::vector<SourceHealthSnapshot>& sources) {
  size_t up = 0;
  for (const auto& s : sources) up += (source_state_is_up(s.state) && !s.in_outage) ? 1 : 0;
  if (up == sources.size()) return "ok";
  return up == 0 ? "down" : "degraded";
}

}  // namespace sd
