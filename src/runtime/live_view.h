// --show: one window per source showing every captured frame with the latest detections drawn
// on it (the seeds' shared-state display), so the view keeps the camera's rate while inference
// runs slower. HighGUI runs on the main thread; readers and sinks only post into it.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "analytics/lines_zones.h"
#include "core/detection.h"
#include "core/error.h"
#include "track/track_trails.h"

namespace sd {

class LiveView {
 public:
  // Fails (kUsage) when there is no display to open a window on.
  static Status check_display_available();
  LiveView(const std::vector<std::string>& window_names, const std::vector<std::string>& class_names);
  ~LiveView();

  void post_frame(int source, const cv::Mat& bgr);            // any thread
  // Any thread. `dets` in the original picture's pixels (`original_size`; empty: the frames'
  // own); with --track, `trails` (the source's trails up to these detections) and `counter` (its
  // lines and zones, or nullptr) are drawn too, as on the annotated video.
  void post_detections(int source, cv::Size original_size, const Detections& dets,
                       const track::TrackTrails* trails = nullptr, const PlaceCounter* counter = nullptr);
  // Main thread: shows what is new, handles keys. Returns false once the user pressed q or Esc.
  bool pump(int wait_ms);

 private:
  struct Slot {
    std::mutex mutex;
    cv::Mat frame;       // latest captured frame
    Detections dets;     // latest detections of this source
    std::optional<track::TrackTrails> trails;  // their trails, with --track
    std::optional<SourcePlaces> places;        // the source's lines and zones, and their counts
    CountingReport counts;
    cv::Size original_size;
    bool fresh = false;
  };
  std::vector<std::string> names_;
  std::vector<std::string> class_names_;
  std::vector<std::unique_ptr<Slot>> slots_;
  cv::Mat canvas_;
};

}  // namespace sd
