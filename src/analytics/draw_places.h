// The counting lines and zones drawn on the annotated video (and so on the web view): each line
// with an arrow to its "in" side and its counts, each zone's outline with its occupancy.
#pragma once

#include <opencv2/core.hpp>

#include "analytics/counting.h"
#include "analytics/lines_zones.h"

namespace sd {

// `places` and `counts` from one PlaceCounter; `scale`: the frame's size over the original's (a
// frame decoded smaller).
void draw_places(cv::Mat& image, const SourcePlaces& places, const CountingReport& counts, double scale);

}  // namespace sd
