// Video files, V4L2 cameras, GStreamer pipelines and RTSP/HTTP streams through OpenCV videoio.
#pragma once

#include <memory>

#include <opencv2/videoio.hpp>

#include "sources/source.h"

namespace sd {

class VideoCaptureSource final : public Source {
 public:
  // `api`: cv::CAP_FFMPEG, cv::CAP_V4L2, cv::CAP_GSTREAMER or cv::CAP_ANY.
  static Result<std::unique_ptr<Source>> open(const std::string& spec, SourceKind kind, int api,
                                              const SourceOptions& options);
  const SourceInfo& info() const override { return info_; }
  Result<bool> read(Frame& frame) override;

 private:
  cv::VideoCapture capture_;
  SourceInfo info_;
  int source_id_ = 0;
  int64_t next_index_ = 0;
  int consecutive_failures_ = 0;
  Clock::time_point start_{};
};

}  // namespace sd
