// Device memory owned by a value: cudaMalloc on creation, cudaFree when it goes, move-only. Grows
// on demand (reserve) so per-frame scratch is allocated once, at the largest size seen.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "engine/native/cuda/cuda_check.h"

namespace sd::native::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }

  // At least `bytes` (the old contents are not kept when it grows).
  Status reserve(size_t bytes) {
    if (bytes <= bytes_) return ok();
    release();
    void* p = nullptr;
    SD_CUDA_TRY(cudaMalloc(&p, bytes));
    ptr_ = p;
    bytes_ = bytes;
    return ok();
  }

  template <class T = void>
  T* get() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void release() {
    if (ptr_) cudaFree(ptr_);  // nothing to do about a failure while letting go
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace sd::native::cuda
