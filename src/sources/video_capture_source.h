// V4L2 cameras and RTSP/HTTP streams through OpenCV videoio (video files go through FFmpeg's own
// API, sources/ffmpeg_video_source.h; GStreamer pipelines through GStreamer's, gstreamer_source.h).
#pragma once

#include <memory>

#include <opencv2/videoio.hpp>

#include "sources/source.h"

namespace sd {

class VideoCaptureSource final : public Source {
 public:
  // `kind`: kCamera or kStream; `api`: cv::CAP_V4L2 or cv::CAP_FFMPEG.
  static Result<std::unique_ptr<Source>> open(const std::string& spec, SourceKind kind, int api,
                                              const SourceOptions& options);
  const SourceInfo& info() const override { return info_; }
  Result<bool> read(Frame& frame) override;
  // A stream that ended before the frames it declared, or a live (RTSP) stream that ended at all.
  std::optional<std::string> damage() const override;

 private:
  cv::VideoCapture capture_;
  SourceInfo info_;
  int source_id_ = 0;
  int64_t next_index_ = 0;
  int64_t declared_frames_ = -1;  // an HTTP file's frame count; -1 for a live stream
  bool ended_ = false;
  Clock::time_point start_{};
};

}  // namespace sd
