// Where each track of one source has been: the last kTrailPoints positions of its box's bottom
// centre (where an object stands: the point lines and zones count), for drawing a short trail.
// Kept by the source's output thread, after the tracker. Bounded: a track not seen for
// kForgetAfterMs of stream time is forgotten; no allocation per frame once the number of tracks
// seen at one time has peaked (a fixed ring of points per track, the tracks in one vector).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/detection.h"

namespace sd::track {

struct TrailPoint {
  float x = 0, y = 0;
};

class TrackTrails {
 public:
  static constexpr int kTrailPoints = 30;
  static constexpr double kForgetAfterMs = 2000;

  struct Trail {
    int64_t id = 0;
    double last_seen_ms = 0;
    std::array<TrailPoint, kTrailPoints> ring{};
    int next = 0;   // where the next point goes
    int count = 0;  // points held, at most kTrailPoints
    // The i-th point held, oldest first (0 <= i < count).
    TrailPoint point(int i) const { return ring[static_cast<std::size_t>((next - count + i + kTrailPoints) % kTrailPoints)]; }
  };

  // One frame's detections (in the source's frame order, timestamps non-decreasing): each one with
  // a track id adds its bottom centre to its track's trail; tracks last seen more than
  // kForgetAfterMs before `timestamp_ms` are forgotten.
  void update(const Detections& detections, double timestamp_ms);

  // nullptr when the track has no trail.
  const Trail* find(int64_t id) const;
  std::size_t size() const { return trails_.size(); }

 private:
  std::vector<Trail> trails_;  // sorted by id (ids only grow: a new track is appended)
};

}  // namespace sd::track
