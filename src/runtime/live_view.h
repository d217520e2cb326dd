// --show: one window per source showing every captured frame with the latest detections drawn
// on it (the seeds' shared-state display), so the view keeps the camera's rate while inference
// runs slower. HighGUI runs on the main thread; readers and sinks only post into it.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "core/detection.h"
#include "core/error.h"

namespace sd {

class LiveView {
 public:
  // Fails (kUsage) when there is no display to open a window on.
  static Status check_display_available();
  LiveView(const std::vector<std::string>& window_names, const std::vector<std::string>& class_names);
  ~LiveView();

  void post_frame(int source, const cv::Mat& bgr);            // any thread
  void post_detections(int source, const Detections& dets);   // any thread
  // Main thread: shows what is new, handles keys. Returns false once the user pressed q or Esc.
  bool pump(int wait_ms);

 private:
  struct Slot {
    std::mutex mutex;
    cv::Mat frame;       // latest captured frame
    Detections dets;     // latest detections of this source
    bool fresh = false;
  };
  std::vector<std::string> names_;
  std::vector<std::string> class_names_;
  std::vector<std::unique_ptr<Slot>> slots_;
  cv::Mat canvas_;
};

}  // namespace sd
