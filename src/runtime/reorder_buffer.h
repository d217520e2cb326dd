// Puts packets back in source order before the sinks. Sequence numbers are contiguous per source
// (given when a worker takes the frame), and at most `capacity` are in flight at once, so a slot
// per (sequence mod capacity) never collides and nothing is allocated per frame.
#pragma once

#include <vector>

#include "runtime/frame_packet.h"

namespace sd {

class ReorderBuffer {
 public:
  explicit ReorderBuffer(size_t capacity) : slots_(capacity ? capacity : 1) {}
  void put(PacketPtr p) {
    auto i = static_cast<size_t>(p->sequence) % slots_.size();
    slots_[i] = std::move(p);
  }
  // The next packet in order, or nullptr if it has not arrived yet.
  PacketPtr take_next() {
    auto i = static_cast<size_t>(next_) % slots_.size();
    if (!slots_[i] || slots_[i]->sequence != next_) return nullptr;
    ++next_;
    return std::move(slots_[i]);
  }
  // Everything still held (out of order behind a gap), for an aborted run.
  std::vector<PacketPtr> release_all() {
    std::vector<PacketPtr> out;
    for (auto& s : slots_)
      if (s) out.push_back(std::move(s));
    return out;
  }
  int64_t next_sequence() const { return next_; }

 private:
  std::vector<PacketPtr> slots_;
  int64_t next_ = 0;
};

}  // namespace sd
