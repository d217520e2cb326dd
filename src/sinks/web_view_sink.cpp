#include "sinks/web_view_sink.h"

#include "analytics/draw_places.h"
#include "sinks/annotate.h"
#include "sinks/trail_drawing.h"

namespace sd {

Status WebViewSink::write(const FrameResult& result) {
  const Frame& frame = result.frame;
  if (!board_->wants(frame.source_id, Clock::now())) return ok();
  cv::Mat scratch;
  const cv::Mat& bgr = frame.bgr(scratch);
  cv::Mat copy = &bgr == &scratch ? scratch : bgr.clone();  // a converted frame is already our own
  if (!frames_drawn_) {
    // Detections are in the original picture's pixels; a frame decoded smaller is drawn at its scale.
    Detections boxes = result.detections;
    const cv::Size decoded = frame.size();
    float sx = 1, sy = 1;
    if (!frame.original_size.empty() && frame.original_size != decoded) {
      sx = static_cast<float>(decoded.width) / static_cast<float>(frame.original_size.width);
      sy = static_cast<float>(decoded.height) / static_cast<float>(frame.original_size.height);
      scale_boxes(boxes, sx, sy);
    }
    if (result.trails) draw_trails(copy, result.detections, *result.trails, sx, sy);
    draw_detections(copy, boxes, class_names_);
    if (result.counter)
      draw_places(copy, result.counter->places(), result.counter->counts(),
                  frame.original_size.empty() ? 1.0 : static_cast<double>(decoded.width) / frame.original_size.width);
  }
  board_->post(frame.source_id, std::move(copy));
  return ok();
}

}  // namespace sd
