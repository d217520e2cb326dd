#include "core/frame.h"
#include "core/frame_outcome.h"

#include <opencv2/imgproc.hpp>

namespace sd {

const cv::Mat& Frame::bgr(cv::Mat& scratch) const {
  if (format != PixelFormat::kI420) return image;
  // BT.601 limited range, the same matrix the I420 letterbox uses (preprocess/letterbox.cpp).
  cv::cvtColor(yuv, scratch, cv::COLOR_YUV2BGR_I420);
  return scratch;
}

cv::Mat& Frame::bgr() {
  if (format == PixelFormat::kI420) {
    bgr(image);
    format = PixelFormat::kBgr;
  }
  return image;
}

}  // namespace sd

namespace sd {

const char* frame_outcome_name(FrameOutcome outcome) {
  switch (outcome) {
    case FrameOutcome::kWritten: return "written";
    case FrameOutcome::kPolicy: return "policy";
    case FrameOutcome::kEvery: return "every";
    case FrameOutcome::kMaxAge: return "max-age";
    case FrameOutcome::kAborted: return "aborted";
    case FrameOutcome::kFailed: return "failed";
  }
  return "?";
}

}  // namespace sd
