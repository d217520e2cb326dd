#include "sources/video_capture_source.h"

#include <cmath>

#include <opencv2/imgproc.hpp>

#include "core/ffmpeg_log.h"

namespace sd {

Result<std::unique_ptr<Source>> VideoCaptureSource::open(const std::string& spec, SourceKind kind, int api,
                                                         const SourceOptions& options) {
  auto src = std::unique_ptr<VideoCaptureSource>(new VideoCaptureSource());
  src->source_id_ = options.source_id;
  src->info_.uri = spec;
  src->info_.kind = kind;
  src->info_.live = true;
  capture_ffmpeg_log();  // OpenCV's FFmpeg backend prints through it: folded into our line
  take_ffmpeg_error();
  bool opened = false;
  try {
    if (kind == SourceKind::kCamera && !spec.empty() && spec.find_first_not_of("0123456789") == std::string::npos)
      opened = src->capture_.open(std::stoi(spec), api);
    else
      opened = src->capture_.open(spec, api);
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
  if (kind == SourceKind::kStream) {
    const double n = src->capture_.get(cv::CAP_PROP_FRAME_COUNT);
    if (std::isfinite(n) && n > 0) src->declared_frames_ = static_cast<int64_t>(n);
  }
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
    ended_ = true;
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

std::optional<std::string> VideoCaptureSource::damage() const {
  if (!ended_ || info_.kind != SourceKind::kStream) return std::nullopt;
  if (declared_frames_ > 0) {
    if (next_index_ >= declared_frames_) return std::nullopt;
    return info_.uri + " was cut short: " + std::to_string(next_index_) + " frames of " + std::to_string(declared_frames_) +
           " declared";
  }
  // A live stream (RTSP, RTMP, SRT) has no end of its own: it ending is a cut. HTTP may serve a
  // finite stream without a frame count (HLS, MJPEG over HTTP): its end is taken as the end.
  const bool live_protocol = info_.uri.rfind("http", 0) != 0;
  if (!live_protocol) return std::nullopt;
  return info_.uri + " was cut short: the stream ended after " + std::to_string(next_index_) + " frames";
}

}  // namespace sd
