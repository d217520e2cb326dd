// The health of each source while a run goes: what a camera watcher checks (is every camera up?).
// One SourceHealth per source, written by the source's reader thread and by the supervisor that
// reconnects a live source (sources/supervised_source.h), read at any time from other threads
// (the web view's /health and /metrics, the profile at exit). Thread-safe; a few updates per
// frame at most, so a mutex is cheap enough.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace sd {

// connecting: opening, no frame yet. live: frames arrive. stalled: no frame for --stall-timeout
// (the supervisor will reconnect). backoff: waiting before the next reconnect attempt. ended: the
// source is done (a file's end, the run's end). failed: gave up (error, or reconnects exhausted).
enum class SourceState { kConnecting, kLive, kStalled, kBackoff, kEnded, kFailed };
const char* source_state_name(SourceState state);
// Whether the source delivers, or will again on its own (connecting/live/stalled/backoff are not
// final; ended is healthy, failed is not).
bool source_state_is_up(SourceState state);

struct SourceHealthSnapshot {
  std::string uri;
  SourceState state = SourceState::kConnecting;
  int64_t frames = 0;                 // frames delivered
  int64_t reconnects = 0;             // successful re-openings after an outage
  int64_t outages = 0;                // times the source went down (stall, error, early end)
  int64_t frames_lost_to_outages = 0; // estimated from the source's frame rate over the outages
  double outage_ms = 0;               // time spent down, the current outage included
  int64_t last_frame_wall_us = 0;     // wall clock of the last frame (0: none yet)
  int64_t state_since_wall_us = 0;    // when the current state began
  std::string last_error;             // why the last outage began ("" when none)
  bool in_outage = false;             // down since an outage began (reconnecting included), until the next frame
};

class SourceHealth {
 public:
  explicit SourceHealth(std::string uri);
  // A frame arrived: the source is live (ends an outage).
  void frame_arrived();
  // The source went down (a stall, an error, an early end of a live stream): an outage begins
  // unless one is already going; `why` is kept for the health report.
  void outage(SourceState state, const std::string& why);
  // Any other state change (connecting, backoff, ended, failed).
  void set_state(SourceState state);
  void count_reconnect();
  // Connected again, and up even before the next frame (a Redis stream may be empty for a while):
  // counts the reconnect, ends the outage, the state is live.
  void recovered();
  void add_lost_frames(int64_t n);
  SourceHealthSnapshot snapshot() const;

 private:
  // Both with mutex_ held: the time down counted up to `now`; the state changed (and since when).
  void end_outage(int64_t now);
  void enter(SourceState state, int64_t now);

  mutable std::mutex mutex_;
  SourceHealthSnapshot s_;
  int64_t outage_began_us_ = 0;  // 0: not in an outage
};

// Every source's health, in source order. Slots have stable addresses (a deque).
class HealthBoard {
 public:
  SourceHealth& add(const std::string& uri);
  size_t size() const;
  SourceHealth& at(size_t i);
  std::vector<SourceHealthSnapshot> snapshot() const;
  // Overall: "ok" when every source is up or ended, "degraded" when some are down (stalled,
  // backoff, failed, or connecting again within an outage) and others are up, "down" when none is up.
  static const char* overall(const std::vector<SourceHealthSnapshot>& sources);

 private:
  mutable std::mutex mutex_;
  std::deque<SourceHealth> slots_;
};

}  // namespace sd
