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

std::vector<track::Appearance> describe_detections(const Detections& detections, const Frame& frame, float min_score) {
  track::PixelView view;
  if (frame.format == PixelFormat::kI420) {
    if (frame.yuv.empty() || !frame.yuv.isContinuous()) return {};
    view = {track::PixelView::Format::kI420, frame.yuv.data, frame.yuv.cols, frame.yuv.rows * 2 / 3, static_cast<size_t>(frame.yuv.cols)};
  } else {
    if (frame.image.empty() || frame.image.type() != CV_8UC3) return {};
    view = {track::PixelView::Format::kBgr, frame.image.data, frame.image.cols, frame.image.rows, frame.image.step[0]};
  }
  // Detections are in the original picture's pixels; the frame may be decoded smaller.
  const cv::Size size = frame.size();
  const float sx = frame.original_size.width > 0 ? static_cast<float>(size.width) / static_cast<float>(frame.original_size.width) : 1.f;
  const float sy = frame.original_size.height > 0 ? static_cast<float>(size.height) / static_cast<float>(frame.original_size.height) : 1.f;
  std::vector<track::Appearance> looks;
  looks.reserve(detections.size());
  for (const Detection& d : detections) looks.push_back(d.score >= min_score ? track::describe_box(view, d, sx, sy) : track::Appearance{});
  return looks;
}

void track_frame(track::ByteTracker& tracker, Detections& detections, const Frame& frame, float conf) {
  std::vector<track::Appearance> looks;
  // Only the confident detections' looks are used (the low-score round goes by boxes alone).
  if (tracker.options().appearance)
    looks = describe_detections(detections, frame, static_cast<float>(tracker.options().track_thresh));
  // Detections are in the original picture's pixels (the frame may be decoded smaller).
  const cv::Size picture = frame.original_size.width > 0 ? frame.original_size : frame.size();
  tracker.set_picture_size(picture.width, picture.height);
  const std::vector<int64_t> ids = tracker.update(detections, frame.timestamp_ms, looks);
  for (size_t i = 0; i < detections.size(); ++i) detections[i].track_id = ids[i];
  keep_confident(detections, conf);
}

}  // namespace sd
