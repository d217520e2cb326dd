#include "core/frame.h"
#include "core/frame_outcome.h"

#include <atomic>
#include <cstring>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "core/log.h"

namespace sd {
namespace {

// A device frame's NV12 read back and made I420 in `yuv`.
Status download_i420(const DeviceFrameRef& device, cv::Mat& yuv) {
  const DeviceNv12& f = device.nv12();
  thread_local std::vector<uint8_t> nv12;  // reused from frame to frame on each thread
  nv12.resize(static_cast<size_t>(f.width) * f.height * 3 / 2);
  SD_TRY(device.download_nv12(nv12.data(), f.width));
  nv12_to_i420(nv12.data(), f.width, f.width, f.height, yuv);
  return ok();
}

void say_failed_download(const Error& e) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) log_warn("a frame decoded on the GPU could not be read back (%s): it is shown empty", e.message.c_str());
}

}  // namespace

Status Frame::to_host() {
  if (format != PixelFormat::kDeviceNv12) return ok();
  if (!device) return fail(ErrorCode::kInternal, "a device frame without its device picture");
  SD_TRY(download_i420(device, yuv));
  format = PixelFormat::kI420;
  return ok();
}

const cv::Mat& Frame::bgr(cv::Mat& scratch) const {
  if (format == PixelFormat::kDeviceNv12) {
    thread_local cv::Mat yuv_scratch;
    if (Status s = download_i420(device, yuv_scratch); !s) {
      say_failed_download(s.error());
      scratch.release();
      return scratch;
    }
    cv::cvtColor(yuv_scratch, scratch, cv::COLOR_YUV2BGR_I420);
    return scratch;
  }
  if (format != PixelFormat::kI420) return image;
  // BT.601 limited range, the same matrix the I420 letterbox uses (preprocess/letterbox.cpp).
  cv::cvtColor(yuv, scratch, cv::COLOR_YUV2BGR_I420);
  return scratch;
}

cv::Mat& Frame::bgr() {
  if (format == PixelFormat::kDeviceNv12) {
    if (Status s = to_host(); !s) {
      say_failed_download(s.error());
      image.release();
      format = PixelFormat::kBgr;
      return image;
    }
  }
  if (format == PixelFormat::kI420) {
    bgr(image);
    format = PixelFormat::kBgr;
  }
  return image;
}

void nv12_to_i420(const uint8_t* nv12, int64_t pitch, int width, int height, cv::Mat& yuv) {
  yuv.create(height * 3 / 2, width, CV_8UC1);
  uint8_t* y = yuv.ptr<uint8_t>();
  for (int r = 0; r < height; ++r) std::memcpy(y + static_cast<size_t>(r) * width, nv12 + r * pitch, static_cast<size_t>(width));
  const int cw = width / 2, ch = height / 2;
  uint8_t* u = y + static_cast<size_t>(width) * height;
  uint8_t* v = u + static_cast<size_t>(cw) * ch;
  const uint8_t* uv = nv12 + pitch * height;
  for (int r = 0; r < ch; ++r) {
    const uint8_t* row = uv + r * pitch;
    for (int c = 0; c < cw; ++c) {
      u[static_cast<size_t>(r) * cw + c] = row[2 * c];
      v[static_cast<size_t>(r) * cw + c] = row[2 * c + 1];
    }
  }
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
