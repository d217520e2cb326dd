// A decoded picture that stays in a GPU's memory (NVDEC's NV12 output) on its way to the GPU
// letterbox, so that the host never touches its pixels unless a stage asks for them
// (Frame::to_host). The buffers come from a small bounded pool per decoder: a frame is a
// reference-counted handle (DeviceFrameRef) on one buffer, which goes back to the pool when the
// last holder lets go; when every buffer is held, the decoder waits for one (back-pressure on the
// reader, never more memory); buffers are allocated when first needed and then reused, none per
// frame. No CUDA here: how buffers are allocated and read back is DeviceFrameMemory's
// (cudaMallocPitch on a GPU, engine/native/cuda/nvdec_decoder.cpp; host memory in the tests).
// docs/gpu.md, "NVDEC".
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/error.h"

namespace sd {

// NV12 in a device's memory: `height` rows of luma, then height / 2 rows of interleaved U, V,
// both `pitch` bytes apart. Even width and height.
struct DeviceNv12 {
  const uint8_t* luma = nullptr;
  const uint8_t* chroma = nullptr;
  int64_t pitch = 0;
  int width = 0, height = 0;
  int device = 0;  // the CUDA device whose memory it is
};

// How a pool gets, reads back and lets go of its buffers.
class DeviceFrameMemory {
 public:
  struct Buffer {
    uint8_t* data = nullptr;  // NV12: height * 3 / 2 rows of `pitch` bytes
    int64_t pitch = 0;
  };
  virtual ~DeviceFrameMemory() = default;
  virtual Result<Buffer> allocate(int width, int height) = 0;
  virtual void free(Buffer buffer) = 0;  // from any thread, when the pool goes
  // The picture into host memory as NV12 (`dst`: height * 3 / 2 rows of `dst_pitch` bytes).
  virtual Status download(const DeviceNv12& src, uint8_t* dst, int64_t dst_pitch) = 0;
  virtual int device() const = 0;
};

class DeviceFramePool;

// One frame of a pool. Copyable (a copy shares the buffer, no allocation); the buffer goes back to
// its pool when the last copy is destroyed or reset, from any thread, also after the decoder is gone.
class DeviceFrameRef {
 public:
  DeviceFrameRef() = default;
  DeviceFrameRef(const DeviceFrameRef& o);
  DeviceFrameRef& operator=(const DeviceFrameRef& o);
  DeviceFrameRef(DeviceFrameRef&& o) noexcept;
  DeviceFrameRef& operator=(DeviceFrameRef&& o) noexcept;
  ~DeviceFrameRef() { reset(); }

  explicit operator bool() const { return pool_ != nullptr; }
  const DeviceNv12& nv12() const;
  int64_t pts() const;
  // The picture into host memory as NV12 (as DeviceFrameMemory::download). Counted by the pool.
  Status download_nv12(uint8_t* dst, int64_t dst_pitch) const;
  void reset();
  int holders() const;  // the handles sharing this buffer now (0 for an empty handle)

 private:
  friend class DeviceFramePool;
  DeviceFrameRef(std::shared_ptr<DeviceFramePool> pool, int slot) : pool_(std::move(pool)), slot_(slot) {}
  std::shared_ptr<DeviceFramePool> pool_;
  int slot_ = -1;
};

class DeviceFramePool : public std::enable_shared_from_this<DeviceFramePool> {
 public:
  // At most `capacity` buffers of `width` x `height` NV12, none allocated yet.
  static std::shared_ptr<DeviceFramePool> create(std::unique_ptr<DeviceFrameMemory> memory, int width, int height, int capacity);
  ~DeviceFramePool();
  DeviceFramePool(const DeviceFramePool&) = delete;
  DeviceFramePool& operator=(const DeviceFramePool&) = delete;

  // A buffer for the next frame (its content the caller's to write), with `pts`: a free one, else a
  // new one while fewer than `capacity` exist, else it waits until a holder lets one go. It fails
  // (one line) after close(), when allocating fails, or when no buffer came back within
  // `stall_ms` (a consumer that stopped: an error, not a hang).
  Result<DeviceFrameRef> acquire(int64_t pts, double stall_ms = 60'000);
  // Wakes every acquire() that waits, which then fails; later ones fail at once.
  void close();

  int width() const { return width_; }
  int height() const { return height_; }
  int capacity() const { return capacity_; }
  int allocated() const;              // buffers allocated so far (never more than capacity)
  int held() const;                   // buffers held by frames now
  int waiting() const;                // acquire() calls waiting for a buffer now
  int64_t downloads() const { return downloads_.load(); }  // frames read back to the host

 private:
  friend class DeviceFrameRef;
  DeviceFramePool(std::unique_ptr<DeviceFrameMemory> memory, int width, int height, int capacity);
  struct Slot {
    DeviceFrameMemory::Buffer buffer;
    DeviceNv12 view;
    int64_t pts = 0;
    std::atomic<int> refs{0};
  };
  void release(int slot);

  std::unique_ptr<DeviceFrameMemory> memory_;
  const int width_, height_, capacity_;
  std::unique_ptr<Slot[]> slots_;  // `capacity_` of them, made once: handles index them without the lock
  mutable std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<int> free_;  // slots allocated and not held
  int allocated_ = 0, waiting_ = 0;
  bool closed_ = false;
  std::atomic<int64_t> downloads_{0};
};

}  // namespace sd
