// Draws the trails of the tracked objects in a frame (track/track_trails.h): for each detection
// with a track id, the track's last positions as a polyline in the track's colour (annotate.h),
// thinner the older the point. Drawn before the boxes, so the labels stay on top.
#pragma once

#include <opencv2/core/mat.hpp>

#include "core/detection.h"
#include "track/track_trails.h"

namespace sd {

// The trails' points are in the original picture's pixels; `sx`, `sy` scale them to `image`'s
// (a frame decoded smaller). Tracks not in `detections` (lost this frame) are not drawn.
void draw_trails(cv::Mat& image, const Detections& detections, const track::TrackTrails& trails, float sx = 1, float sy = 1);

}  // namespace sd
