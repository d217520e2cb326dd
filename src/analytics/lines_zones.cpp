#include "analytics/lines_zones.h"

#include <algorithm>
#include <cmath>

namespace sd {

double signed_distance(Point2 a, Point2 b, Point2 p) {
  const double dx = b.x - a.x, dy = b.y - a.y;
  const double length = std::hypot(dx, dy);
  if (length == 0) return 0;
  // The cross product (b - a) x (p - a): with y pointing down it is positive on the walker's right.
  return (dx * (p.y - a.y) - dy * (p.x - a.x)) / length;
}

bool path_crosses_segment(Point2 a, Point2 b, Point2 p, Point2 q) {
  const double dp = signed_distance(a, b, p), dq = signed_distance(a, b, q);
  if (dp * dq > 0 || dp == dq) return false;
  const double u = dp / (dp - dq);
  const Point2 x{p.x + u * (q.x - p.x), p.y + u * (q.y - p.y)};
  const double dx = b.x - a.x, dy = b.y - a.y;
  const double t = ((x.x - a.x) * dx + (x.y - a.y) * dy) / (dx * dx + dy * dy);
  return t >= 0 && t <= 1;
}

bool inside_polygon(const std::vector<Point2>& polygon, Point2 p) {
  bool inside = false;
  for (size_t i = 0, j = polygon.size() - 1; i < polygon.size(); j = i++) {
    const Point2 a = polygon[i], b = polygon[j];
    if ((a.y > p.y) != (b.y > p.y) && p.x < (b.x - a.x) * (p.y - a.y) / (b.y - a.y) + a.x) inside = !inside;
  }
  return inside;
}

double distance_to_polygon_edge(const std::vector<Point2>& polygon, Point2 p) {
  double best = INFINITY;
  for (size_t i = 0, j = polygon.size() - 1; i < polygon.size(); j = i++) {
    const Point2 a = polygon[j], b = polygon[i];
    const double dx = b.x - a.x, dy = b.y - a.y, len2 = dx * dx + dy * dy;
    const double t = len2 > 0 ? std::clamp(((p.x - a.x) * dx + (p.y - a.y) * dy) / len2, 0.0, 1.0) : 0.0;
    best = std::min(best, std::hypot(p.x - (a.x + t * dx), p.y - (a.y + t * dy)));
  }
  return best;
}

namespace {
// Back over a line it has just crossed, a track must go past this share of its box's extent
// across the line (PlaceCounter::update_line).
constexpr double kReversalShare = 0.25;

// The box's extent along the line's normal: its width across a vertical line, its height across a
// horizontal one.
double extent_across(const CountingLine& line, const Detection& d) {
  const double dx = line.b.x - line.a.x, dy = line.b.y - line.a.y, len = std::hypot(dx, dy);
  if (len <= 0) return 0;
  return (std::abs(dy) * (d.x2 - d.x1) + std::abs(dx) * (d.y2 - d.y1)) / len;
}
}  // namespace

Point2 track_point(const Detection& d) { return {(d.x1 + d.x2) / 2.0, static_cast<double>(d.y2)}; }

double default_band_px(int width, int height) { return std::max(1.0, 0.005 * std::hypot(width, height)); }

PlaceCounter::PlaceCounter(int source_id, std::string source, SourcePlaces places, std::vector<std::string> class_names,
                           double band_px, double forget_after_ms)
    : source_id_(source_id),
      places_(std::move(places)),
      class_names_(std::move(class_names)),
      band_px_(band_px),
      forget_after_ms_(forget_after_ms),
      line_tracks_(places_.lines.size()),
      zone_tracks_(places_.zones.size()) {
  for (const auto& l : places_.lines) counts_.lines.push_back({source, l.name, {}, {}});
  for (const auto& z : places_.zones) counts_.zones.push_back({source, z.name});
}

std::string PlaceCounter::class_name(int class_id) const {
  return class_id >= 0 && static_cast<size_t>(class_id) < class_names_.size() ? class_names_[static_cast<size_t>(class_id)]
                                                                               : std::to_string(class_id);
}

CountEvent PlaceCounter::event(CountEventKind kind, const std::string& place, int64_t track, int class_id, double t,
                               int64_t frame) const {
  CountEvent e;
  e.kind = kind;
  e.place = place;
  e.source_id = source_id_;
  e.track_id = track;
  e.class_id = class_id;
  e.class_name = class_name(class_id);
  e.timestamp_ms = t;
  e.frame = frame;
  return e;
}

void PlaceCounter::update(const Detections& detections, int64_t frame, double timestamp_ms, std::vector<CountEvent>& events) {
  for (const Detection& d : detections) {
    if (d.track_id < 0) continue;
    const Point2 p = track_point(d);
    for (size_t i = 0; i < places_.lines.size(); ++i) update_line(i, d, p, frame, timestamp_ms, events);
    for (size_t i = 0; i < places_.zones.size(); ++i) update_zone(i, d, p, frame, timestamp_ms, events);
  }
  forget_gone(timestamp_ms, events);
}

void PlaceCounter::update_line(size_t i, const Detection& d, Point2 p, int64_t frame, double t, std::vector<CountEvent>& events) {
  const CountingLine& line = places_.lines[i];
  LineTrack& track = line_tracks_[i][d.track_id];
  track.last_seen_ms = t;
  const double distance = signed_distance(line.a, line.b, p);
  const int side = distance > band_px_ ? 1 : (distance < -band_px_ ? -1 : 0);
  if (side == 0) return;  // in the band: nothing decided
  if (side == -track.crossed_to && std::abs(distance) <= std::max(band_px_, kReversalShare * extent_across(line, d)))
    return;  // back over the line it crossed by less than a quarter of its box: not decided yet
  if (track.side != 0 && side != track.side && path_crosses_segment(line.a, line.b, track.anchor, p)) {
    track.crossed_to = side;
    const bool in = side > 0;  // from the left to the right
    bool& counted = in ? track.counted_in : track.counted_out;
    if (!counted) {
      counted = true;
      CountEvent e = event(CountEventKind::kCrossed, line.name, d.track_id, d.class_id, t, frame);
      e.direction = in ? "in" : "out";
      {
        std::lock_guard<std::mutex> lock(mutex_);
        auto& by_class = in ? counts_.lines[i].in_by_class : counts_.lines[i].out_by_class;
        ++by_class[e.class_name];
      }
      events.push_back(std::move(e));
    }
  }
  track.side = side;
  track.anchor = p;
}

void PlaceCounter::update_zone(size_t i, const Detection& d, Point2 p, int64_t frame, double t, std::vector<CountEvent>& events) {
  const CountingZone& zone = places_.zones[i];
  ZoneTrack& track = zone_tracks_[i][d.track_id];
  track.last_seen_ms = t;
  track.last_frame = frame;
  track.class_id = d.class_id;
  if (distance_to_polygon_edge(zone.polygon, p) <= band_px_) return;  // on the edge: nothing decided
  const ZoneSide side = inside_polygon(zone.polygon, p) ? ZoneSide::kInside : ZoneSide::kOutside;
  if (side == track.side) return;
  const ZoneSide before = track.side;
  track.side = side;
  if (side == ZoneSide::kInside) {  // from outside, or first seen inside
    track.entered_ms = t;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++counts_.zones[i].entries;
      ++counts_.zones[i].occupancy;
    }
    events.push_back(event(CountEventKind::kEntered, zone.name, d.track_id, d.class_id, t, frame));
  } else if (before == ZoneSide::kInside) {
    CountEvent e = event(CountEventKind::kLeft, zone.name, d.track_id, d.class_id, t, frame);
    e.dwell_ms = t - track.entered_ms;
    count_exit(i, e.dwell_ms);
    events.push_back(std::move(e));
  }
}

void PlaceCounter::count_exit(size_t zone, double dwell_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  ZoneCounts& z = counts_.zones[zone];
  ++z.exits;
  --z.occupancy;
  ++z.dwell_count;
  z.dwell_total_ms += dwell_ms;
  z.dwell_max_ms = std::max(z.dwell_max_ms, dwell_ms);
}

// A track unseen for longer than the tracker's buffer is gone for good: it leaves the zones it was
// in (when it was last seen) and its state is dropped, so memory stays bounded on a long stream.
void PlaceCounter::forget_gone(double t, std::vector<CountEvent>& events) {
  for (auto& tracks : line_tracks_)
    std::erase_if(tracks, [&](const auto& kv) { return t - kv.second.last_seen_ms > forget_after_ms_; });
  for (size_t i = 0; i < zone_tracks_.size(); ++i) {
    for (auto it = zone_tracks_[i].begin(); it != zone_tracks_[i].end();) {
      const ZoneTrack& track = it->second;
      if (t - track.last_seen_ms <= forget_after_ms_) {
        ++it;
        continue;
      }
      if (track.side == ZoneSide::kInside) {
        CountEvent e = event(CountEventKind::kLeft, places_.zones[i].name, it->first, track.class_id, track.last_seen_ms,
                             track.last_frame);
        e.dwell_ms = track.last_seen_ms - track.entered_ms;
        count_exit(i, e.dwell_ms);
        events.push_back(std::move(e));
      }
      it = zone_tracks_[i].erase(it);
    }
  }
}

CountingReport PlaceCounter::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

}  // namespace sd
