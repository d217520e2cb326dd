#include "sinks/frame_overlay.h"

#include "analytics/draw_places.h"
#include "sinks/annotate.h"
#include "sinks/trail_drawing.h"

namespace sd {

void draw_overlay(cv::Mat& image, cv::Size original_size, const FrameOverlay& overlay,
                  const std::vector<std::string>& class_names) {
  float sx = 1, sy = 1;
  if (!original_size.empty() && original_size != image.size()) {
    sx = static_cast<float>(image.cols) / static_cast<float>(original_size.width);
    sy = static_cast<float>(image.rows) / static_cast<float>(original_size.height);
  }
  if (overlay.detections) {
    if (overlay.trails) draw_trails(image, *overlay.detections, *overlay.trails, sx, sy);
    if (sx == 1 && sy == 1) {
      draw_detections(image, *overlay.detections, class_names);
    } else {
      thread_local Detections scaled;  // no allocation per frame once the count has peaked
      scaled.assign(overlay.detections->begin(), overlay.detections->end());
      scale_boxes(scaled, sx, sy);
      draw_detections(image, scaled, class_names);
    }
  }
  if (overlay.places && overlay.counts) draw_places(image, *overlay.places, *overlay.counts, sx);
}

}  // namespace sd
