// What line and zone counting (analytics/lines_zones.h) produces: the events of one frame, and the
// counts so far per source, line and zone, for the events file, /metrics, the exit profile and
// --profile-json.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace sd {

enum class CountEventKind { kCrossed, kEntered, kLeft };
const char* count_event_name(CountEventKind kind);  // "crossed", "entered", "left"

// One track crossing a line, or entering or leaving a zone.
struct CountEvent {
  CountEventKind kind = CountEventKind::kCrossed;
  std::string place;          // the line's or the zone's name
  const char* direction = "";  // crossings: "in" (from the line's left to its right) or "out"
  int source_id = 0;
  int64_t track_id = -1;
  int class_id = 0;
  std::string class_name;
  double timestamp_ms = 0;  // the frame's capture time (kLeft of a track that vanished: when last seen)
  int64_t frame = 0;        // the frame's index in its source
  double dwell_ms = -1;     // kLeft: how long the track was inside
};

struct LineCounts {
  std::string source, name;
  std::map<std::string, int64_t> in_by_class, out_by_class;  // class name -> crossings
  int64_t in() const;
  int64_t out() const;
};

struct ZoneCounts {
  std::string source, name;
  int64_t entries = 0, exits = 0;
  int64_t occupancy = 0;      // tracks inside now
  int64_t dwell_count = 0;    // exits with a dwell time (every exit)
  double dwell_total_ms = 0, dwell_max_ms = 0;
  double dwell_mean_ms() const { return dwell_count > 0 ? dwell_total_ms / static_cast<double>(dwell_count) : 0; }
};

struct CountingReport {
  std::vector<LineCounts> lines;
  std::vector<ZoneCounts> zones;
  bool empty() const { return lines.empty() && zones.empty(); }
  void append(const CountingReport& other);
};

// The exit profile's short table ("" when there are no lines or zones).
std::string format_counting(const CountingReport& report);
// {"lines": [{"source", "line", "in", "out", "in_by_class", "out_by_class"}],
//  "zones": [{"source", "zone", "entries", "exits", "occupancy", "dwell_max_ms", "dwell_mean_ms"}]}
nlohmann::json counting_to_json(const CountingReport& report);
// One event as the events file's JSON line (without the newline); `source` already JSON-quoted.
std::string count_event_json(const CountEvent& event, const std::string& source_json);

}  // namespace sd
