// Everything drawn over a frame, in one order, wherever a frame is shown: the annotated video,
// the web view and the --show window. The tracks' trails first (under the boxes), then the boxes,
// then the counting lines and zones with their counts.
#pragma once

#include <string>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "analytics/counting.h"
#include "analytics/lines_zones.h"
#include "core/detection.h"
#include "track/track_trails.h"

namespace sd {

struct FrameOverlay {
  const Detections* detections = nullptr;      // in the original picture's pixels
  const track::TrackTrails* trails = nullptr;  // with --track: the source's trails up to these detections
  const SourcePlaces* places = nullptr;        // the source's lines and zones (nullptr: none)
  const CountingReport* counts = nullptr;      // their counts, with places
};

// Draws `overlay` on `image`, a frame whose original picture was `original_size` (empty: the
// frame's own size). A frame decoded smaller than its picture is drawn on at its scale.
void draw_overlay(cv::Mat& image, cv::Size original_size, const FrameOverlay& overlay,
                  const std::vector<std::string>& class_names);

}  // namespace sd
