// Annotated video, encoded and muxed by FFmpeg (libavcodec/libavformat): the source's fps and frame
// size kept, MPEG-4 part 2 in .mp4/.mov/.m4v/.mkv, MJPEG in .avi. Every step's return value is
// checked, so a failed write (a full disk) is an error naming the file, not a file without its
// index. Written under a temporary name (sinks/atomic_file.h) and put in place by finish(); into a
// device or a FIFO in place, and for `-` to standard output, as Matroska only (the one container
// written front to back: MP4, MOV and AVI seek back to finish).
#pragma once

#include <memory>
#include <string>

#include <opencv2/core/mat.hpp>

#include "sinks/atomic_file.h"
#include "sinks/sink.h"

namespace sd {

struct VideoEncoder;  // FFmpeg state (video_sink.cpp)

class VideoSink final : public Sink {
 public:
  // The extensions -o takes, for its error message.
  static const char* supported_extensions();
  // Whether `path` names a video file by its extension (one of supported_extensions()).
  static bool is_video_path(const std::string& path);
  // Checks the extension, creates the temporary file (so a bad path fails before processing
  // starts, leaving nothing), and opens the encoder now when the size is known (else at the
  // first frame).
  static Result<std::unique_ptr<VideoSink>> open(const std::string& path, double fps, int width, int height);
  ~VideoSink() override;
  std::string name() const override { return "video " + path_; }
  bool wants_drawn_frame() const override { return true; }
  // Writes result.frame as it is: draw on it first (sinks/annotate.h).
  Status write(const FrameResult& result) override;
  // Flushes the encoder, writes the container's index and renames the file onto its name. After
  // a failed write the temporary file is removed instead: nothing broken is left under the name.
  Status finish() override;
  // Drops the output (the temporary file is removed), for a run that failed before it ended.
  void discard();
  int64_t frames_written() const { return frames_; }

 private:
  VideoSink() = default;
  Status open_encoder(cv::Size size);
  Status encode(bool flush);
  Status failed(const std::string& what, int averror);
  std::string path_;
  std::string shown_;        // the path, or "standard output" for `-`
  bool to_stdout_ = false;   // `-o -`: Matroska on standard output, no file of ours
  AtomicFile file_;
  double fps_ = 25;
  cv::Size size_;
  std::unique_ptr<VideoEncoder> enc_;
  cv::Mat resized_;
  cv::Mat converted_;  // BGR of an I420 frame written without drawing
  int64_t frames_ = 0;
  bool finished_ = false;
  bool broken_ = false;  // a write failed: finish() discards
};

}  // namespace sd
