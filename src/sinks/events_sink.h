// --events: line crossings and zone entries and exits (analytics/lines_zones.h) as JSON Lines, one
// object per event, written with the care of the detections file (sinks/jsonl_sink.h): in place,
// whole lines only (a frame's events in one write, cut back to the last whole line when a write
// fails part-way), created or truncated by start(), `-` for standard output:
// {"source": "clip.mp4", "event": "crossed", "line": "door", "direction": "in", "track_id": 3,
//  "class_id": 0, "class_name": "person", "timestamp_ms": 1233.3, "frame": 37}
// {"source": "clip.mp4", "event": "left", "zone": "bay", ..., "dwell_ms": 2400.0}
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sinks/json_lines_file.h"
#include "sinks/sink.h"

namespace sd {

class EventsSink final : public Sink {
 public:
  static Result<std::unique_ptr<EventsSink>> open(const std::string& path, const std::vector<std::string>& source_uris);
  std::string name() const override { return "events " + file_->path(); }
  Status start() override;
  Status write(const FrameResult& result) override;
  Status finish() override;

 private:
  std::unique_ptr<JsonLinesFile> file_;
  std::mutex mutex_;  // lines_ is shared by every source's sink thread
  std::vector<std::string> sources_json_;
  std::string lines_;
};

}  // namespace sd
