#include "sinks/annotate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <opencv2/imgproc.hpp>

namespace sd {

namespace {

// Golden-ratio hue steps give well-separated, stable colours for any number of classes or tracks.
cv::Scalar hue_step_colour(double offset, double step) {
  double h = std::fmod(offset + 0.618033988749895 * step, 1.0);
  double s = 0.85, v = 0.95;
  double c = v * s, x = c * (1 - std::fabs(std::fmod(h * 6, 2.0) - 1)), m = v - c;
  double r = 0, g = 0, b = 0;
  switch (static_cast<int>(h * 6) % 6) {
    case 0: r = c, g = x; break;
    case 1: r = x, g = c; break;
    case 2: g = c, b = x; break;
    case 3: g = x, b = c; break;
    case 4: r = x, b = c; break;
    default: r = c, b = x; break;
  }
  return cv::Scalar((b + m) * 255, (g + m) * 255, (r + m) * 255);
}

}  // namespace

cv::Scalar class_colour(int class_id) { return hue_step_colour(0.07, class_id); }
cv::Scalar track_colour(int64_t track_id) { return hue_step_colour(0.41, static_cast<double>(track_id)); }
cv::Scalar detection_colour(const Detection& d) { return d.track_id >= 0 ? track_colour(d.track_id) : class_colour(d.class_id); }

void draw_detections(cv::Mat& image, const Detections& detections, const std::vector<std::string>& names) {
  const int thickness = std::max(1, static_cast<int>(std::lround(std::min(image.cols, image.rows) / 400.0)));
  const double font_scale = std::max(0.4, std::min(image.cols, image.rows) / 1200.0);
  char label[160];
  for (const Detection& d : detections) {
    cv::Scalar colour = detection_colour(d);
    cv::Point p1(static_cast<int>(std::lround(d.x1)), static_cast<int>(std::lround(d.y1)));
    cv::Point p2(static_cast<int>(std::lround(d.x2)), static_cast<int>(std::lround(d.y2)));
    cv::rectangle(image, p1, p2, colour, thickness, cv::LINE_AA);
    const bool named = d.class_id >= 0 && static_cast<size_t>(d.class_id) < names.size();
    const std::string id = d.track_id >= 0 ? "#" + std::to_string(d.track_id) + " " : "";
    if (named) std::snprintf(label, sizeof label, "%s%s %.2f", id.c_str(), names[static_cast<size_t>(d.class_id)].c_str(), d.score);
    else std::snprintf(label, sizeof label, "%s%d %.2f", id.c_str(), d.class_id, d.score);
    int baseline = 0;
    cv::Size text = cv::getTextSize(label, cv::FONT_HERSHEY_SIMPLEX, font_scale, 1, &baseline);
    // Label above the box, or inside it when the box touches the top edge.
    int top = p1.y - text.height - baseline - 2 >= 0 ? p1.y - text.height - baseline - 2 : p1.y;
    cv::rectangle(image, cv::Point(p1.x, top), cv::Point(p1.x + text.width + 2, top + text.height + baseline + 2),
                  colour, cv::FILLED);
    double luma = 0.114 * colour[0] + 0.587 * colour[1] + 0.299 * colour[2];
    cv::putText(image, label, cv::Point(p1.x + 1, top + text.height + 1), cv::FONT_HERSHEY_SIMPLEX, font_scale,
                luma > 140 ? cv::Scalar(0, 0, 0) : cv::Scalar(255, 255, 255), 1, cv::LINE_AA);
  }
}

}  // namespace sd
