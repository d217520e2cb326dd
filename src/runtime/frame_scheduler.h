// The inference inbox: preprocessed frames of every source wait here for a worker. Each source has
// its own lane with its own policy (block for files; latest or drop-oldest for live sources), so a
// fast camera can never starve or delay a file. Workers take micro-batches across lanes, oldest
// capture first, waiting at most `batch_wait` for a batch to fill.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "runtime/bounded_queue.h"
#include "runtime/frame_packet.h"
#include "runtime/ring.h"

namespace sd {

class FrameScheduler {
 public:
  struct LaneConfig {
    QueuePolicy policy = QueuePolicy::kBlock;
    size_t capacity = 2;
  };
  explicit FrameScheduler(const std::vector<LaneConfig>& lanes);

  struct PushResult {
    bool accepted = false;  // false once aborted (the packet is handed back in `evicted`)
    PacketPtr evicted;      // the packet the policy dropped to make room, or the refused one
    double blocked_ms = 0;
  };
  PushResult push(int lane, PacketPtr packet);

  // Fills `out` with 1..max packets, each given the next sequence number of its lane (so the
  // sinks can restore source order); packets older than `max_age` (if > 0) go to `expired`
  // instead. Returns false when every lane is finished and empty (or on abort).
  bool pop_batch(size_t max, std::chrono::microseconds batch_wait, std::chrono::microseconds max_age,
                 std::vector<PacketPtr>& out, std::vector<PacketPtr>& expired);

  void finish_lane(int lane);  // its producer is done; workers drain what is left
  // From now on a push into the lane when full waits for room whatever its policy (a stop
  // request: the frames read are finished, none is dropped to make room for another).
  void block_when_full(int lane);
  void abort();                // stop everything now; drain() returns what was left
  std::vector<PacketPtr> drain();
  // Packets waiting in each lane now (for the live figures; any thread).
  std::vector<size_t> depths() const;

 private:
  // Index of the lane whose front packet was captured first, or -1.
  int oldest_lane() const;
  bool all_finished_and_empty() const;

  struct Lane {
    Lane(const LaneConfig& c) : config(c), items(c.policy == QueuePolicy::kLatest ? 1 : c.capacity) {}
    LaneConfig config;
    Ring<PacketPtr> items;
    bool finished = false;
    bool block_when_full = false;
    int64_t next_sequence = 0;
  };
  mutable std::mutex mutex_;
  std::condition_variable not_empty_, not_full_;
  std::vector<Lane> lanes_;
  size_t queued_ = 0;
  bool aborted_ = false;
};

}  // namespace sd
