// What travels between the pipeline's threads: one frame, its network input, its detections and
// its timings. Packets come from a fixed pool and go back to it, so memory stays bounded and the
// steady state allocates nothing (the frame's pixels and the input planes reuse their buffers).
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/frame.h"
#include "core/tensor.h"
#include "preprocess/letterbox.h"
#include "runtime/profiler.h"

namespace sd {

struct FramePacket {
  Frame frame;
  int64_t sequence = 0;          // per source, contiguous over every frame that left the reader
  Tensor input;                  // [1, 3, H, W], filled by preprocess
  LetterboxTransform transform;
  Detections detections;         // original-frame pixels
  std::array<Clock::time_point, kStageCount> entered{}, left{};  // per stage

  void reset_for_reuse() {
    detections.clear();
    entered.fill({});
    left.fill({});
  }
};

using PacketPtr = std::unique_ptr<FramePacket>;

// A fixed set of packets; acquire() waits when all are in flight (back-pressure on the readers).
class PacketPool {
 public:
  explicit PacketPool(size_t count);
  // nullptr once the pool is closed.
  PacketPtr acquire();
  void release(PacketPtr packet);
  void close();
  size_t size() const { return total_; }
  size_t available() const;

 private:
  size_t total_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<PacketPtr> free_;
  bool closed_ = false;
};

}  // namespace sd
