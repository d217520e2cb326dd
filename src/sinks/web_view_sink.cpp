#include "sinks/web_view_sink.h"

#include "sinks/frame_overlay.h"

namespace sd {

Status WebViewSink::write(const FrameResult& result) {
  const Frame& frame = result.frame;
  if (!board_->wants(frame.source_id, Clock::now())) return ok();
  cv::Mat scratch;
  const cv::Mat& bgr = frame.bgr(scratch);  // a frame left on the GPU is downloaded for this copy alone
  if (bgr.empty()) return ok();             // its download failed (said once): nothing to show
  cv::Mat copy = &bgr == &scratch ? scratch : bgr.clone();  // a converted frame is already our own
  if (!frames_drawn_) {
    const CountingReport counts = result.counter ? result.counter->counts() : CountingReport{};
    const FrameOverlay overlay{&result.detections, result.trails, result.counter ? &result.counter->places() : nullptr,
                               result.counter ? &counts : nullptr};
    draw_overlay(copy, frame.original_size, overlay, class_names_);
  }
  board_->post(frame.source_id, std::move(copy));
  return ok();
}

}  // namespace sd
