#include "sources/video_capture_source.h"

#include <cmath>

#include <opencv2/imgproc.hpp>

namespace sd {

namespace {
// A file whose decoder fails this many times in a row (before its known end) is broken.
constexpr int kMaxConsecutiveFailures = 25;
}  // namespace

Result<std::unique_ptr<Source>> VideoCaptureSource::open(const std::string& spec, SourceKind kind, int api,
                                                         const SourceOptions& options) {
  auto src = std::unique_ptr<VideoCaptureSource>(new VideoCaptureSource());
  src->source_id_ = options.source_id;
  src->info_.uri = spec;
  src->info_.kind = kind;
  src->info_.live = kind != SourceKind::kVideoFile;
  bool opened = false;
  try {
    if (kind == SourceKind::kCamera && !spec.empty() &&
        spec.find_first_not_of("0123456789") == std::string::npos)
      opened = src->capture_.open(std::stoi(spec), api);
    else
      opened = src->capture_.open(spec, api);
  } catch (const cv::Exception& e) {
    return fail(ErrorCode::kSource, std::string("cannot open ") + source_kind_name(kind) + " " + spec + ": " + e.what());
  }
  if (!opened || !src->capture_.isOpened())
    return fail(ErrorCode::kSource, std::string("cannot open ") + source_kind_name(kind) + " " + spec +
                                        (kind == SourceKind::kVideoFile ? " (not a video OpenCV/FFmpeg can decode)" : ""));
  src->info_.fps = src->capture_.get(cv::CAP_PROP_FPS);
  if (!std::isfinite(src->info_.fps) || src->info_.fps <= 0 || src->info_.fps > 1000) src->info_.fps = 0;
  src->info_.width = static_cast<int>(src->capture_.get(cv::CAP_PROP_FRAME_WIDTH));
  src->info_.height = static_cast<int>(src->capture_.get(cv::CAP_PROP_FRAME_HEIGHT));
  if (kind == SourceKind::kVideoFile) {
    double n = src->capture_.get(cv::CAP_PROP_FRAME_COUNT);
    src->info_.frame_count = (std::isfinite(n) && n > 0) ? static_cast<int64_t>(n) : -1;
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
    // A file that stops before its known length may only have a damaged frame: skip it
    // (the caller counts it) unless the decoder keeps failing.
    const bool before_end = info_.frame_count > 0 && next_index_ < info_.frame_count;
    if (info_.kind == SourceKind::kVideoFile && before_end && ++consecutive_failures_ < kMaxConsecutiveFailures) {
      frame.index = next_index_++;
      return fail(ErrorCode::kCorruptFrame, "frame " + std::to_string(frame.index) + " of " + info_.uri +
                                                " could not be decoded");
    }
    if (info_.live && next_index_ == 0)
      return fail(ErrorCode::kSource, std::string(source_kind_name(info_.kind)) + " " + info_.uri + " delivered no frame");
    return false;
  }
  consecutive_failures_ = 0;
  if (frame.image.type() != CV_8UC3) {
    // Gray or BGRA from cameras/pipelines: normalise to BGR once here.
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
  if (info_.live)
    frame.timestamp_ms = std::chrono::duration<double, std::milli>(frame.capture_time - start_).count();
  else if (info_.fps > 0)
    frame.timestamp_ms = static_cast<double>(frame.index) * 1000.0 / info_.fps;
  else
    frame.timestamp_ms = capture_.get(cv::CAP_PROP_POS_MSEC);
  return true;
}

}  // namespace sd
