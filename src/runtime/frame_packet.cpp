#include "runtime/frame_packet.h"

namespace sd {

PacketPool::PacketPool(size_t count) : total_(count) {
  free_.reserve(count);
  for (size_t i = 0; i < count; ++i) free_.push_back(std::make_unique<FramePacket>());
}

PacketPtr PacketPool::acquire() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return !free_.empty() || closed_; });
  if (closed_ || free_.empty()) return nullptr;
  PacketPtr p = std::move(free_.back());
  free_.pop_back();
  p->reset_for_reuse();
  return p;
}

void PacketPool::release(PacketPtr packet) {
  if (!packet) return;
  // A frame kept on the GPU gives its buffer back to the decoder now, not when the packet is reused.
  if (packet->frame.format == PixelFormat::kDeviceNv12) packet->frame.format = PixelFormat::kBgr;
  packet->frame.device.reset();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(packet));
  }
  cv_.notify_one();
}

void PacketPool::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  cv_.notify_all();
}

size_t PacketPool::available() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_.size();
}

}  // namespace sd
