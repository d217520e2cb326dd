// The latest annotated frame of each source, handed from the pipeline's sink threads to the web
// view's MJPEG streams. The pipeline's side is cheap and never waits on a viewer: a frame is
// copied only while someone watches and at most --serve-fps times a second, and posting it is a
// swap under a lock no encoder holds while it encodes. The viewers' side encodes each frame to
// JPEG once, however many watch, and only the latest: a slow viewer skips frames.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <opencv2/core.hpp>

#include "core/frame.h"
#include "transport/jpeg_encoder.h"

namespace sd {

class FrameBoard {
 public:
  FrameBoard(size_t sources, double max_fps, int jpeg_quality = 80);
  size_t size() const { return slots_.size(); }

  // The pipeline's side: whether source s wants a frame now (someone watches, and the last one
  // posted is at least 1/max_fps old). When true, post() the frame (a copy the board keeps).
  bool wants(int s, Clock::time_point now);
  void post(int s, cv::Mat bgr);

  // The viewers' side. A Watch counts one viewer of source s while it lives.
  class Watch {
   public:
    Watch(FrameBoard& board, int s);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    FrameBoard& board_;
    int s_;
  };
  struct Jpeg {
    uint64_t sequence = 0;                   // pass it as `after` for the next one
    std::shared_ptr<const std::string> data;
  };
  // The JPEG of the latest frame of source s newer than `after`, waiting up to `timeout` for one;
  // nullopt on timeout, once closed, or when it cannot be encoded.
  std::optional<Jpeg> next(int s, uint64_t after, std::chrono::milliseconds timeout);
  int viewers(int s) const { return slots_[static_cast<size_t>(s)].watchers.load(); }
  // Wakes every viewer; next() returns nullopt from then on (the run is ending).
  void close();
  bool closed() const { return closed_; }

 private:
  struct Slot {
    std::mutex mutex;               // frame, sequence
    std::condition_variable posted;
    cv::Mat frame;
    uint64_t sequence = 0;
    std::atomic<int> watchers{0};
    Clock::time_point last_post{};  // the pipeline's thread only
    std::mutex encode_mutex;        // encoder, jpeg, jpeg_sequence: one encode per frame
    transport::JpegEncoder encoder;
    std::shared_ptr<const std::string> jpeg;
    uint64_t jpeg_sequence = 0;
  };
  std::deque<Slot> slots_;  // deque: mutexes are not movable
  std::chrono::nanoseconds min_interval_;
  int quality_;
  std::atomic<bool> closed_{false};
};

}  // namespace sd
