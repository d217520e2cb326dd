// Draws detections on a frame: a box, the track id, the class name and the confidence, one stable
// colour per track (with --track) or per class.
#pragma once

#include <string>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "core/detection.h"

namespace sd {

cv::Scalar class_colour(int class_id);
// A tracked object's colour: by its track id, so that neighbouring objects of one class differ.
cv::Scalar track_colour(int64_t track_id);
// The colour a detection is drawn in: its track's when tracked, else its class's.
cv::Scalar detection_colour(const Detection& d);

// `names` may be shorter than the class ids seen: missing names print as the id.
void draw_detections(cv::Mat& image, const Detections& detections, const std::vector<std::string>& names);

}  // namespace sd
