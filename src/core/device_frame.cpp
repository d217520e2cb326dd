#include "core/device_frame.h"

#include <chrono>
#include <string>
#include <utility>

namespace sd {

DeviceFrameRef::DeviceFrameRef(const DeviceFrameRef& o) : pool_(o.pool_), slot_(o.slot_) {
  if (pool_) pool_->slots_[static_cast<size_t>(slot_)].refs.fetch_add(1, std::memory_order_relaxed);
}

DeviceFrameRef& DeviceFrameRef::operator=(const DeviceFrameRef& o) {
  if (this != &o) *this = DeviceFrameRef(o);
  return *this;
}

DeviceFrameRef::DeviceFrameRef(DeviceFrameRef&& o) noexcept : pool_(std::move(o.pool_)), slot_(std::exchange(o.slot_, -1)) {}

DeviceFrameRef& DeviceFrameRef::operator=(DeviceFrameRef&& o) noexcept {
  if (this == &o) return *this;
  reset();
  pool_ = std::move(o.pool_);
  slot_ = std::exchange(o.slot_, -1);
  return *this;
}

void DeviceFrameRef::reset() {
  if (!pool_) return;
  if (pool_->slots_[static_cast<size_t>(slot_)].refs.fetch_sub(1, std::memory_order_acq_rel) == 1) pool_->release(slot_);
  pool_.reset();  // the pool itself goes with its last frame when the decoder is gone already
  slot_ = -1;
}

const DeviceNv12& DeviceFrameRef::nv12() const {
  static const DeviceNv12 none{};
  return pool_ ? pool_->slots_[static_cast<size_t>(slot_)].view : none;
}

int64_t DeviceFrameRef::pts() const { return pool_ ? pool_->slots_[static_cast<size_t>(slot_)].pts : 0; }

int DeviceFrameRef::holders() const { return pool_ ? pool_->slots_[static_cast<size_t>(slot_)].refs.load() : 0; }

Status DeviceFrameRef::download_nv12(uint8_t* dst, int64_t dst_pitch) const {
  if (!pool_) return fail(ErrorCode::kInternal, "download of an empty device frame");
  pool_->downloads_.fetch_add(1, std::memory_order_relaxed);
  return pool_->memory_->download(nv12(), dst, dst_pitch);
}

DeviceFramePool::DeviceFramePool(std::unique_ptr<DeviceFrameMemory> memory, int width, int height, int capacity)
    : memory_(std::move(memory)), width_(width), height_(height), capacity_(capacity), slots_(new Slot[static_cast<size_t>(capacity)]) {
  free_.reserve(static_cast<size_t>(capacity));
}

std::shared_ptr<DeviceFramePool> DeviceFramePool::create(std::unique_ptr<DeviceFrameMemory> memory, int width, int height, int capacity) {
  return std::shared_ptr<DeviceFramePool>(new DeviceFramePool(std::move(memory), width, height, capacity < 1 ? 1 : capacity));
}

DeviceFramePool::~DeviceFramePool() {
  // Only once no frame holds a buffer (each handle keeps the pool alive).
  for (int i = 0; i < allocated_; ++i) memory_->free(slots_[static_cast<size_t>(i)].buffer);
}

Result<DeviceFrameRef> DeviceFramePool::acquire(int64_t pts, double stall_ms) {
  std::unique_lock lock(mutex_);
  int slot = -1;
  if (free_.empty() && allocated_ < capacity_ && !closed_) {
    // A new buffer; the lock is held while allocating: the decoder's thread alone acquires.
    SD_ASSIGN_OR_RETURN(DeviceFrameMemory::Buffer b, memory_->allocate(width_, height_));
    slot = allocated_++;
    Slot& s = slots_[static_cast<size_t>(slot)];
    s.buffer = b;
    s.view = DeviceNv12{b.data, b.data + b.pitch * height_, b.pitch, width_, height_, memory_->device()};
  } else {
    ++waiting_;
    const bool got = returned_.wait_for(lock, std::chrono::duration<double, std::milli>(stall_ms), [&] { return !free_.empty() || closed_; });
    --waiting_;
    if (closed_) return fail(ErrorCode::kInterrupted, "device frame pool closed");
    // A consumer that stopped giving frames back ends the source (kSource) rather than hanging it.
    if (!got)
      return fail(ErrorCode::kSource, "all " + std::to_string(capacity_) + " decoded frames on the GPU held for " +
                                            std::to_string(static_cast<int64_t>(stall_ms / 1000)) + " s: their consumer stopped");
    slot = free_.back();
    free_.pop_back();
  }
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.pts = pts;
  s.refs.store(1, std::memory_order_relaxed);
  return DeviceFrameRef(shared_from_this(), slot);
}

void DeviceFramePool::release(int slot) {
  {
    std::lock_guard lock(mutex_);
    free_.push_back(slot);
  }
  returned_.notify_one();
}

void DeviceFramePool::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  returned_.notify_all();
}

int DeviceFramePool::allocated() const {
  std::lock_guard lock(mutex_);
  return allocated_;
}

int DeviceFramePool::held() const {
  std::lock_guard lock(mutex_);
  return allocated_ - static_cast<int>(free_.size());
}

int DeviceFramePool::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_;
}

}  // namespace sd
