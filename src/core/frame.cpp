#include "core/frame.h"

#include <opencv2/imgproc.hpp>

namespace sd {

cv::Mat& Frame::bgr() {
  if (format == PixelFormat::kI420) {
    // BT.601 limited range, the same matrix the I420 letterbox uses (preprocess/yuv_letterbox.cpp).
    cv::cvtColor(yuv, image, cv::COLOR_YUV2BGR_I420);
    format = PixelFormat::kBgr;
  }
  return image;
}

}  // namespace sd
