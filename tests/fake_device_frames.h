// "Device" memory in the host's for the device frame pool (core/device_frame.h): what the tests
// use in place of cudaMallocPitch, counting allocations, frees and downloads; rows padded to 64
// bytes as a GPU's pitch would be.
#pragma once

#include <atomic>
#include <cstring>
#include <memory>

#include <opencv2/core/mat.hpp>

#include "core/device_frame.h"

namespace sd::test {

struct FakeDeviceCounts {
  std::atomic<int> allocations{0}, frees{0};
  std::atomic<int> downloads{0};
};

class FakeDeviceMemory final : public DeviceFrameMemory {
 public:
  explicit FakeDeviceMemory(std::shared_ptr<FakeDeviceCounts> counts, int device = 0) : counts_(std::move(counts)), device_(device) {}
  Result<Buffer> allocate(int width, int height) override {
    const int64_t pitch = (width + 63) / 64 * 64;
    counts_->allocations++;
    return Buffer{new uint8_t[static_cast<size_t>(pitch) * height * 3 / 2](), pitch};
  }
  void free(Buffer b) override {
    counts_->frees++;
    delete[] b.data;
  }
  Status download(const DeviceNv12& f, uint8_t* dst, int64_t dst_pitch) override {
    counts_->downloads++;
    for (int y = 0; y < f.height; ++y) std::memcpy(dst + y * dst_pitch, f.luma + y * f.pitch, static_cast<size_t>(f.width));
    for (int y = 0; y < f.height / 2; ++y)
      std::memcpy(dst + (f.height + y) * dst_pitch, f.chroma + y * f.pitch, static_cast<size_t>(f.width));
    return ok();
  }
  int device() const override { return device_; }

 private:
  std::shared_ptr<FakeDeviceCounts> counts_;
  int device_;
};

// A frame of `pool` holding the I420 picture `i420` (width x height) as NV12: what a decoder's
// copy-out does on a GPU.
inline Result<DeviceFrameRef> upload_i420(DeviceFramePool& pool, const cv::Mat& i420, int width, int height, int64_t pts) {
  SD_ASSIGN_OR_RETURN(DeviceFrameRef ref, pool.acquire(pts));
  const DeviceNv12& f = ref.nv12();
  auto* luma = const_cast<uint8_t*>(f.luma);
  auto* chroma = const_cast<uint8_t*>(f.chroma);
  const uint8_t* y = i420.ptr<uint8_t>();
  const uint8_t* u = y + static_cast<size_t>(width) * height;
  const uint8_t* v = u + static_cast<size_t>(width / 2) * (height / 2);
  for (int r = 0; r < height; ++r) std::memcpy(luma + r * f.pitch, y + static_cast<size_t>(r) * width, static_cast<size_t>(width));
  for (int r = 0; r < height / 2; ++r)
    for (int c = 0; c < width / 2; ++c) {
      chroma[r * f.pitch + 2 * c] = u[r * (width / 2) + c];
      chroma[r * f.pitch + 2 * c + 1] = v[r * (width / 2) + c];
    }
  return ref;
}

}  // namespace sd::test
