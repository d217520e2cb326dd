// A frame as it travels through the pipeline: the decoded image plus where and when it came from.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <opencv2/core/mat.hpp>

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

  // Width and height of the picture, whichever the format.
  cv::Size size() const {
    return format == PixelFormat::kI420 ? cv::Size(yuv.cols, yuv.rows * 2 / 3) : image.size();
  }
  // The frame as BGR: an I420 frame is converted once (into `image`, whose buffer is reused from
  // frame to frame) and is BGR from then on.
  cv::Mat& bgr();
  // The same without changing the frame: `image` itself, or an I420 frame converted into `scratch`.
  const cv::Mat& bgr(cv::Mat& scratch) const;
  // Marks the frame as holding `image` (sources that decode to BGR call this).
  void set_bgr() { format = PixelFormat::kBgr; }
};

}  // namespace sd
