#include "track/track_trails.h"

#include <algorithm>
#include <cmath>

namespace sd::track {
namespace {

bool id_below(const TrackTrails::Trail& t, int64_t id) { return t.id < id; }

}  // namespace

void TrackTrails::update(const Detections& detections, double timestamp_ms) {
  for (const Detection& d : detections) {
    if (d.track_id < 0) continue;
    auto it = std::lower_bound(trails_.begin(), trails_.end(), d.track_id, id_below);
    // A new id is the largest so far (appended); an older one comes back after it was forgotten
    // when --track-buffer keeps lost tracks longer than kForgetAfterMs (inserted in its place).
    if (it == trails_.end() || it->id != d.track_id) {
      Trail fresh;
      fresh.id = d.track_id;
      it = trails_.insert(it, fresh);
    }
    Trail& t = *it;
    t.last_seen_ms = timestamp_ms;
    t.ring[static_cast<size_t>(t.next)] = {0.5f * (d.x1 + d.x2), d.y2};
    t.next = (t.next + 1) % kTrailPoints;
    t.count = std::min(t.count + 1, kTrailPoints);
  }
  // Either way: a stream whose clock went back (a restarted source) must not keep a trail for ever.
  std::erase_if(trails_, [timestamp_ms](const Trail& t) { return std::fabs(timestamp_ms - t.last_seen_ms) > kForgetAfterMs; });
}

const TrackTrails::Trail* TrackTrails::find(int64_t id) const {
  auto it = std::lower_bound(trails_.begin(), trails_.end(), id, id_below);
  return it != trails_.end() && it->id == id ? &*it : nullptr;
}

}  // namespace sd::track
