// BGR frames to JPEG with libjpeg-turbo: the frames `publish` puts on the wire and the web view's
// MJPEG streams. Keeps its handle and output buffer: no allocation per frame once the largest
// frame has been seen.
#pragma once

#include <string>

#include <opencv2/core.hpp>

#include "core/error.h"

namespace sd::transport {

class JpegEncoder {
 public:
  JpegEncoder();
  ~JpegEncoder();
  JpegEncoder(const JpegEncoder&) = delete;
  JpegEncoder& operator=(const JpegEncoder&) = delete;

  // 4:2:0 at `quality` (1..100); `fast_dct` trades a little accuracy for speed (the web view's
  // pictures; frames for the detector are made with the accurate one). Errors: kInternal,
  // libjpeg-turbo's reason.
  Result<std::string> encode(const cv::Mat& bgr, int quality, bool fast_dct);

 private:
  void* handle_;
  unsigned char* buffer_ = nullptr;  // tjAlloc'ed, grown by tjCompress2
  unsigned long capacity_ = 0;
};

}  // namespace sd::transport
