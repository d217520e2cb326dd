#include "analytics/draw_places.h"

#include <cmath>
#include <string>

#include <opencv2/imgproc.hpp>

namespace sd {
namespace {

const cv::Scalar kLineColor(0, 220, 255);  // amber (BGR)
const cv::Scalar kZoneColor(255, 160, 0);  // light blue

cv::Point at(Point2 p, double scale) { return {static_cast<int>(std::lround(p.x * scale)), static_cast<int>(std::lround(p.y * scale))}; }

void label(cv::Mat& image, const std::string& text, cv::Point where, const cv::Scalar& color) {
  int baseline = 0;
  const cv::Size size = cv::getTextSize(text, cv::FONT_HERSHEY_SIMPLEX, 0.45, 1, &baseline);
  where.x = std::clamp(where.x, 0, std::max(0, image.cols - size.width));
  where.y = std::clamp(where.y, size.height + 2, std::max(size.height + 2, image.rows - baseline));
  cv::rectangle(image, {where.x, where.y - size.height - 2}, {where.x + size.width, where.y + baseline}, cv::Scalar(0, 0, 0), cv::FILLED);
  cv::putText(image, text, where, cv::FONT_HERSHEY_SIMPLEX, 0.45, color, 1, cv::LINE_AA);
}

}  // namespace

void draw_places(cv::Mat& image, const SourcePlaces& places, const CountingReport& counts, double scale) {
  for (size_t i = 0; i < places.zones.size(); ++i) {
    std::vector<cv::Point> outline;
    for (Point2 p : places.zones[i].polygon) outline.push_back(at(p, scale));
    cv::polylines(image, outline, /*isClosed=*/true, kZoneColor, 2, cv::LINE_AA);
    const int64_t inside = i < counts.zones.size() ? counts.zones[i].occupancy : 0;
    label(image, places.zones[i].name + ": " + std::to_string(inside) + " inside", outline[0] + cv::Point(4, 16), kZoneColor);
  }
  for (size_t i = 0; i < places.lines.size(); ++i) {
    const CountingLine& l = places.lines[i];
    const cv::Point a = at(l.a, scale), b = at(l.b, scale);
    cv::line(image, a, b, kLineColor, 2, cv::LINE_AA);
    // An arrow from the middle towards the "in" side (the walker's right: (-dy, dx) with y down).
    const double dx = l.b.x - l.a.x, dy = l.b.y - l.a.y, length = std::hypot(dx, dy);
    const cv::Point middle = (a + b) / 2;
    if (length > 0) {
      const cv::Point tip = middle + cv::Point(static_cast<int>(std::lround(-dy / length * 20)), static_cast<int>(std::lround(dx / length * 20)));
      cv::arrowedLine(image, middle, tip, kLineColor, 2, cv::LINE_AA, 0, 0.35);
    }
    const int64_t in = i < counts.lines.size() ? counts.lines[i].in() : 0;
    const int64_t out = i < counts.lines.size() ? counts.lines[i].out() : 0;
    label(image, l.name + ": in " + std::to_string(in) + " out " + std::to_string(out), middle + cv::Point(6, -6), kLineColor);
  }
}

}  // namespace sd
