// Counting lines and zones, per source, from the tracks of its frames in frame order.
//
// A track's position is the bottom centre of its box (where an object stands on the ground).
// Lines: the directed segment P1 -> P2 has a left and a right side as a walker going from P1 to P2
// on the picture sees them; "in" is a crossing from the left to the right, "out" the other way
// (a line drawn left to right counts downward motion as in; one drawn bottom to top counts
// left-to-right motion as in). A crossing is counted when the track's side changes and its path
// between the two positions passes through the segment (not beside its ends), at most once per
// track, line and direction.
// Jitter: a point closer to a line (or a zone's edge) than `band_px` is on neither side: the side
// (inside or outside) changes only once the track is past the band, so a box trembling on a line
// counts nothing, and one touching it and going back counts nothing. Back over a line it has just
// crossed, a track must go further: past a quarter of its box's extent across the line (at least
// the band), so that a box shrinking to the part still seen (an object passing in front) is not a
// crossing back.
// Zones: a track entering the polygon is an entry, leaving it an exit with its dwell time; a track
// first seen inside a zone counts as an entry (it is there: occupancy = entries - exits). A track
// the tracker dropped (unseen for longer than its buffer) leaves its zones then, with the time it
// was last seen.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "analytics/counting.h"
#include "core/detection.h"

namespace sd {

struct Point2 {
  double x = 0, y = 0;
};

// Geometry, in pixels (y down).
// Positive on the right of a -> b (as a walker from a to b sees it), negative on its left: the
// distance from the infinite line through a and b.
double signed_distance(Point2 a, Point2 b, Point2 p);
// Whether the path from p to q (on opposite sides of the line through a, b) passes through the
// segment a-b itself.
bool path_crosses_segment(Point2 a, Point2 b, Point2 p, Point2 q);
bool inside_polygon(const std::vector<Point2>& polygon, Point2 p);  // even-odd rule
double distance_to_polygon_edge(const std::vector<Point2>& polygon, Point2 p);
Point2 track_point(const Detection& d);  // the bottom centre of the box

struct CountingLine {
  std::string name;
  Point2 a, b;
};
struct CountingZone {
  std::string name;
  std::vector<Point2> polygon;
};

// One source's lines and zones (pixels of its frames).
struct SourcePlaces {
  std::vector<CountingLine> lines;
  std::vector<CountingZone> zones;
  bool empty() const { return lines.empty() && zones.empty(); }
};

class PlaceCounter {
 public:
  // `source`: the name the counts carry; `forget_after_ms`: the tracker's buffer (a track unseen
  // this long is gone); `band_px`: the jitter band (default_band_px).
  PlaceCounter(int source_id, std::string source, SourcePlaces places, std::vector<std::string> class_names,
               double band_px, double forget_after_ms);

  // One frame's detections (those with track_id -1 are ignored), frames in order. Appends its events.
  void update(const Detections& detections, int64_t frame, double timestamp_ms, std::vector<CountEvent>& events);
  // The counts so far; from any thread.
  CountingReport counts() const;
  const SourcePlaces& places() const { return places_; }

 private:
  struct LineTrack {
    int side = 0;  // -1 left, +1 right, 0 not yet known (born in the band)
    Point2 anchor;  // its last position on that side
    bool counted_in = false, counted_out = false;
    int crossed_to = 0;  // the side its last crossing reached (0: none yet)
    double last_seen_ms = 0;
  };
  enum class ZoneSide { kUnknown, kInside, kOutside };
  struct ZoneTrack {
    ZoneSide side = ZoneSide::kUnknown;
    double entered_ms = 0, last_seen_ms = 0;
    int64_t last_frame = 0;
    int class_id = 0;
  };
  void update_line(size_t i, const Detection& d, Point2 p, int64_t frame, double t, std::vector<CountEvent>& events);
  void update_zone(size_t i, const Detection& d, Point2 p, int64_t frame, double t, std::vector<CountEvent>& events);
  void forget_gone(double t, std::vector<CountEvent>& events);
  void count_exit(size_t zone, double dwell_ms);
  CountEvent event(CountEventKind kind, const std::string& place, int64_t track, int class_id, double t, int64_t frame) const;
  std::string class_name(int class_id) const;

  int source_id_;
  SourcePlaces places_;
  std::vector<std::string> class_names_;
  double band_px_, forget_after_ms_;
  std::vector<std::unordered_map<int64_t, LineTrack>> line_tracks_;  // per line
  std::vector<std::unordered_map<int64_t, ZoneTrack>> zone_tracks_;  // per zone
  mutable std::mutex mutex_;  // guards counts_ (read by /metrics)
  CountingReport counts_;
};

// The jitter band for frames of this size: 0.5% of the diagonal, at least 1 pixel.
double default_band_px(int width, int height);

}  // namespace sd
