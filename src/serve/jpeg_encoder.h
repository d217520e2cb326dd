// BGR frames to JPEG with libjpeg-turbo, for the web view's MJPEG streams. Keeps its handle and
// output buffer: no allocation per frame once the largest frame has been seen.
#pragma once

#include <string>

#include <opencv2/core.hpp>

#include "core/error.h"

namespace sd {

class JpegEncoder {
 public:
  JpegEncoder();
  ~JpegEncoder();
  JpegEncoder(const JpegEncoder&) = delete;
  JpegEncoder& operator=(const JpegEncoder&) = delete;

  // Errors: kInternal, libjpeg-turbo's reason.
  Result<std::string> encode(const cv::Mat& bgr, int quality);

 private:
  void* handle_;
  unsigned char* buffer_ = nullptr;  // tjAlloc'ed, grown by tjCompress2
  unsigned long capacity_ = 0;
};

}  // namespace sd
