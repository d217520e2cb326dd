// Draws detections on a frame: a box, the class name and the confidence, one stable colour per class.
#pragma once

#include <string>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "core/detection.h"

namespace sd {

cv::Scalar class_colour(int class_id);

// `names` may be shorter than the class ids seen: missing names print as the id.
void draw_detections(cv::Mat& image, const Detections& detections, const std::vector<std::string>& names);

}  // namespace sd
