#include "transport/jpeg_encoder.h"

#include <turbojpeg.h>

namespace sd::transport {

JpegEncoder::JpegEncoder() : handle_(tjInitCompress()) {}

JpegEncoder::~JpegEncoder() {
  if (buffer_) tjFree(buffer_);
  if (handle_) tjDestroy(static_cast<tjhandle>(handle_));
}

Result<std::string> JpegEncoder::encode(const cv::Mat& bgr, int quality, bool fast_dct) {
  if (!handle_) return fail(ErrorCode::kInternal, "JPEG encoder: libjpeg-turbo could not be initialised");
  if (bgr.empty() || bgr.type() != CV_8UC3) return fail(ErrorCode::kInternal, "JPEG encoder: not a BGR image");
  auto* h = static_cast<tjhandle>(handle_);
  // The buffer is sized for the worst case (tjBufSize) and never reallocated by libjpeg-turbo.
  const unsigned long needed = tjBufSize(bgr.cols, bgr.rows, TJSAMP_420);
  if (needed > capacity_) {
    if (buffer_) tjFree(buffer_);
    buffer_ = tjAlloc(static_cast<int>(needed));
    capacity_ = buffer_ ? needed : 0;
    if (!buffer_) return fail(ErrorCode::kInternal, "JPEG encoder: out of memory");
  }
  unsigned long size = capacity_;
  if (tjCompress2(h, bgr.data, bgr.cols, static_cast<int>(bgr.step), bgr.rows, TJPF_BGR, &buffer_, &size, TJSAMP_420,
                  quality, (fast_dct ? TJFLAG_FASTDCT : 0) | TJFLAG_NOREALLOC) != 0)
    return fail(ErrorCode::kInternal, std::string("JPEG encoder: ") + tjGetErrorStr2(h));
  return std::string(reinterpret_cast<const char*>(buffer_), size);
}

}  // namespace sd::transport
