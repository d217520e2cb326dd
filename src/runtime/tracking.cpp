#include "runtime/tracking.h"

#include <algorithm>

namespace sd {

const char* track_mode_name(TrackMode m) {
  switch (m) {
    case TrackMode::kAuto: return "auto";
    case TrackMode::kByteTrack: return "bytetrack";
    case TrackMode::kIou: return "iou";
    case TrackMode::kOff: return "off";
  }
  return "auto";
}

bool tracks_source(TrackMode mode, SourceKind kind) {
  switch (mode) {
    case TrackMode::kOff: return false;
    case TrackMode::kByteTrack:
    case TrackMode::kIou: return true;
    case TrackMode::kAuto: return kind != SourceKind::kImages && kind != SourceKind::kRedis;
  }
  return false;
}

std::unique_ptr<track::ByteTracker> make_tracker(const RunOptions& options, const SourceInfo& source) {
  if (!tracks_source(options.track, source.kind)) return nullptr;
  track::TrackerOptions t = options.tracker;
  t.motion = options.track != TrackMode::kIou;
  const double interval_ms = source.fps > 0 ? 1000.0 / source.fps : 1000.0 / 30;
  return std::make_unique<track::ByteTracker>(t, interval_ms);
}

float decode_threshold(float conf, const track::TrackerOptions& tracker, bool any_tracked) {
  return any_tracked ? std::min(conf, static_cast<float>(tracker.low_thresh)) : conf;
}

void keep_confident(Detections& detections, float conf) {
  std::erase_if(detections, [conf](const Detection& d) { return d.score < conf; });
}

void track_frame(track::ByteTracker& tracker, Detections& detections, double timestamp_ms, float conf) {
  const std::vector<int64_t> ids = tracker.update(detections, timestamp_ms);
  for (size_t i = 0; i < detections.size(); ++i) detections[i].track_id = ids[i];
  keep_confident(detections, conf);
}

}  // namespace sd
