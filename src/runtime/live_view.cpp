#include "runtime/live_view.h"

#include <cstdlib>

#include <opencv2/highgui.hpp>

#include "sinks/frame_overlay.h"

namespace sd {

Status LiveView::check_display_available() {
  const char* x = std::getenv("DISPLAY");
  const char* wl = std::getenv("WAYLAND_DISPLAY");
  if ((!x || !*x) && (!wl || !*wl))
    return fail(ErrorCode::kUsage, "--show needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set");
  return ok();
}

LiveView::LiveView(const std::vector<std::string>& window_names, const std::vector<std::string>& class_names)
    : names_(window_names), class_names_(class_names) {
  for (size_t i = 0; i < names_.size(); ++i) slots_.push_back(std::make_unique<Slot>());
  for (const auto& n : names_) cv::namedWindow(n, cv::WINDOW_AUTOSIZE);
}

LiveView::~LiveView() {
  try {
    cv::destroyAllWindows();
  } catch (...) {
  }
}

void LiveView::post_frame(int source, const cv::Mat& bgr) {
  Slot& s = *slots_[static_cast<size_t>(source)];
  std::lock_guard<std::mutex> lock(s.mutex);
  bgr.copyTo(s.frame);  // reuses the slot's buffer
  s.fresh = true;
}

void LiveView::post_detections(int source, cv::Size original_size, const Detections& dets,
                               const track::TrackTrails* trails, const PlaceCounter* counter) {
  Slot& s = *slots_[static_cast<size_t>(source)];
  std::lock_guard<std::mutex> lock(s.mutex);
  s.dets.assign(dets.begin(), dets.end());
  s.original_size = original_size;
  if (trails) s.trails = *trails;  // a few KiB: the view's own copy, drawn on the main thread
  if (counter) {
    if (!s.places) s.places = counter->places();
    s.counts = counter->counts();
  }
}

bool LiveView::pump(int wait_ms) {
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = *slots_[i];
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (!s.fresh) continue;
      s.frame.copyTo(canvas_);
      s.fresh = false;
      const FrameOverlay overlay{&s.dets, s.trails ? &*s.trails : nullptr, s.places ? &*s.places : nullptr, &s.counts};
      draw_overlay(canvas_, s.original_size, overlay, class_names_);
    }
    cv::imshow(names_[i], canvas_);
  }
  int key = cv::waitKey(wait_ms);
  return !(key == 'q' || key == 'Q' || key == 27);
}

}  // namespace sd
