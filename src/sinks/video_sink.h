// Annotated video through OpenCV's VideoWriter (FFmpeg): the source's fps and frame size kept.
#pragma once

#include <memory>
#include <string>

#include <opencv2/videoio.hpp>

#include "sinks/sink.h"

namespace sd {

class VideoSink final : public Sink {
 public:
  // Opens the writer now when the size is known (else at the first frame) and always checks
  // that the path is writable, so a bad path fails before processing starts.
  static Result<std::unique_ptr<VideoSink>> open(const std::string& path, double fps, int width, int height);
  std::string name() const override { return "video " + path_; }
  // Writes result.frame.image as it is: draw on it first (sinks/annotate.h).
  Status write(const FrameResult& result) override;
  Status finish() override;
  int64_t frames_written() const { return frames_; }

 private:
  Status open_writer(cv::Size size);
  std::string path_;
  double fps_ = 25;
  cv::Size size_;
  cv::VideoWriter writer_;
  cv::Mat resized_;
  cv::Mat converted_;  // BGR of an I420 frame written without drawing
  int64_t frames_ = 0;
  bool finished_ = false;
};

}  // namespace sd
