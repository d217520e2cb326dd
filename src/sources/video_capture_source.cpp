#include "sources/video_capture_source.h"

#include <cmath>

#include <opencv2/imgproc.hpp>

#include "core/ffmpeg_log.h"

namespace sd {

Result<std::unique_ptr<Source>> VideoCaptureSource::open(const std::string& spec, const SourceOptions& options) {
  const SourceKind kind = SourceKind::kCamera;
  auto src = std::unique_ptr<VideoCaptureSource>(new VideoCaptureSource());
  src->source_id_ = options.source_id;
  src->info_.uri = spec;
  src->info_.kind = kind;
  src->info_.live = true;
  capture_ffmpeg_log();  // OpenCV's FFmpeg backend prints through it: folded into our line
  take_ffmpeg_error();
  bool opened = false;
  try {
    if (!spec.empty() && spec.find_first_not_of("0123456789") == std::string::npos)
      opened = src->capture_.open(std::stoi(spec), cv::CAP_V4L2);
    else
      opened = src->capture_.open(spec, cv::CAP_V4L2);
  } catch (const cv::Exception& e) {
    return fail(ErrorCode::kSource, std::string("cannot open ") + source_kind_name(kind) + " " + spec + ": " + e.what());
  }
  if (!opened || !src->capture_.isOpened()) {
    const std::string why = take_ffmpeg_error();
    return fail(ErrorCode::kSource, std::string("cannot open ") + source_kind_name(kind) + " " + spec + (why.empty() ? "" : ": " + why));
  }
  src->info_.fps = src->capture_.get(cv::CAP_PROP_FPS);
  if (!std::isfinite(src->info_.fps) || src->info_.fps <= 0 || src->info_.fps > 1000) src->info_.fps = 0;
  src->info_.width = static_cast<int>(src->capture_.get(cv::CAP_PROP_FRAME_WIDTH));
  src->info_.height = static_cast<int>(src->capture_.get(cv::CAP_PROP_FRAME_HEIGHT));
  src->start_ = Clock::now();
  return std::unique_ptr<Source>(std::move(src));
}

Result<bool> VideoCaptureSource::read(Frame& frame) {
  bool got = false;
  try {
    frame.set_bgr();
    got = capture_.read(frame.image);
  } catch (const cv::Exception& e) {
    got = false;
  }
  frame.capture_time = Clock::now();
  frame.source_id = source_id_;
  if (!got || frame.image.empty()) {
    if (next_index_ == 0)
      return fail(ErrorCode::kSource, std::string(source_kind_name(info_.kind)) + " " + info_.uri + " delivered no frame");
    return false;
  }
  if (frame.image.type() != CV_8UC3) {
    // Gray or BGRA from cameras: normalise to BGR once here.
    cv::Mat converted;
    if (frame.image.channels() == 1) cv::cvtColor(frame.image, converted, cv::COLOR_GRAY2BGR);
    else if (frame.image.channels() == 4) cv::cvtColor(frame.image, converted, cv::COLOR_BGRA2BGR);
    else return fail(ErrorCode::kSource, info_.uri + " delivers frames of an unsupported pixel type");
    frame.image = converted;
  }
  if (info_.width == 0) {
    info_.width = frame.image.cols;
    info_.height = frame.image.rows;
  }
  frame.index = next_index_++;
  frame.timestamp_ms = std::chrono::duration<double, std::milli>(frame.capture_time - start_).count();
  return true;
}

}  // namespace sd
