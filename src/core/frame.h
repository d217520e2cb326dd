// A frame as it travels through the pipeline: the decoded image plus where and when it came from.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <opencv2/core/mat.hpp>

#include "core/device_frame.h"
#include "core/error.h"

namespace sd {

using Clock = std::chrono::steady_clock;

// Now on the wall clock, in microseconds since the Unix epoch: capture times on the wire.
inline int64_t wall_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// How a source delivered the pixels. Video decoders produce planar YUV 4:2:0; converting every
// frame to BGR costs as much as letterboxing it (0.65 ms at 720p), and with JSON output nothing
// but the network input needs the pixels, so such frames stay I420 until something asks for BGR.
enum class PixelFormat {
  kBgr,   // `image`: 8-bit, 3 channels
  kI420,  // `yuv`: Y plane (height x width), then U, then V (height/2 x width/2 each), limited
          // range BT.601 (what OpenCV's and FFmpeg's default conversions assume); even sizes
  kDeviceNv12,  // `device` only: NV12 in a GPU's memory (NVDEC) that no stage has needed on the
                // host yet; to_host() downloads it (once) and it is kI420 from then on
};

struct Frame {
  cv::Mat image;              // BGR pixels when format == kBgr (and after bgr() converted them)
  cv::Mat yuv;                // I420 pixels when format == kI420: rows = height * 3 / 2
  PixelFormat format = PixelFormat::kBgr;
  int source_id = 0;          // index of the source in the run (several sources in one process)
  int64_t index = 0;          // 0-based position in the source (counts skipped corrupt frames too)
  double timestamp_ms = 0;    // position in the stream (file) or time since start (live)
  Clock::time_point capture_time{};  // when the pipeline got it from the source
  std::string origin;         // the source's own name for it, when it has one (a Redis entry id),
                              // so that the source can be told what became of it
  // Frames that come over the wire (transport/) keep their producer's names for them:
  std::string source_name;    // the producer's source id (empty: the run's source, by its URI)
  int64_t capture_wall_us = 0;  // the producer's capture time, microseconds since the Unix epoch (0: unknown)
  cv::Size original_size;     // the picture's size before a reduced-scale decode (empty: as decoded);
                              // detections are reported in these pixels
  // The picture in a GPU's memory, where the source decoded it there and the run letterboxes on
  // that GPU (Source::keep_frames_on_device): the GPU preprocess reads it without a host copy.
  // Kept after a download, until the frame is overwritten or its packet goes back to the pool.
  DeviceFrameRef device;

  // Width and height of the picture, whichever the format.
  cv::Size size() const {
    if (format == PixelFormat::kDeviceNv12) return cv::Size(device.nv12().width, device.nv12().height);
    return format == PixelFormat::kI420 ? cv::Size(yuv.cols, yuv.rows * 2 / 3) : image.size();
  }
  // The pixels on the host: a kDeviceNv12 frame is downloaded into `yuv` as I420 (once: the
  // frame is kI420 from then on); any other frame is already there. Stages that need pixels (the
  // CPU letterbox, drawing, the live view, the tracker's appearance cue) call this first.
  Status to_host();
  // The frame as BGR: an I420 frame is converted once (into `image`, whose buffer is reused from
  // frame to frame) and is BGR from then on; a device frame is downloaded first (to_host(); where
  // the download fails, said once, the image is empty).
  cv::Mat& bgr();
  // The same without changing the frame: `image` itself, or an I420 frame converted into `scratch`
  // (a device frame downloaded for this call alone, and converted).
  const cv::Mat& bgr(cv::Mat& scratch) const;
  // Marks the frame as holding `image` (sources that decode to BGR call this).
  void set_bgr() {
    format = PixelFormat::kBgr;
    device.reset();
  }
};

}  // namespace sd

namespace sd {
// NV12 (Y plane, then interleaved U, V; `pitch` bytes a row) into I420 in `yuv` (height * 3 / 2
// rows of `width` bytes: Y, then U, then V), as the CPU decoder's frames are.
void nv12_to_i420(const uint8_t* nv12, int64_t pitch, int width, int height, cv::Mat& yuv);
}  // namespace sd
