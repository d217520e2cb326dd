// V4L2 cameras through OpenCV videoio (video files and network streams go through FFmpeg's own
// API, sources/ffmpeg_video_source.h; GStreamer pipelines through GStreamer's, gstreamer_source.h).
#pragma once

#include <memory>

#include <opencv2/videoio.hpp>

#include "sources/source.h"

namespace sd {

class VideoCaptureSource final : public Source {
 public:
  // `spec`: a camera's number or its /dev/video path.
  static Result<std::unique_ptr<Source>> open(const std::string& spec, const SourceOptions& options);
  const SourceInfo& info() const override { return info_; }
  Result<bool> read(Frame& frame) override;

 private:
  cv::VideoCapture capture_;
  SourceInfo info_;
  int source_id_ = 0;
  int64_t next_index_ = 0;
  Clock::time_point start_{};
};

}  // namespace sd
