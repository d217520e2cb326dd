// Typed dense row-major tensors of the native engine.
//  - HostTensor owns its bytes (64-byte aligned, zero-filled); copies SHARE the buffer (constants,
//    initializers and folded values are immutable once built; clone() for a private copy).
//  - TensorRef is a non-owning view handed to kernels; always plain row-major (a backend that keeps
//    blocked layouts between its own ops converts at the edges).
#pragma once

#include <memory>
#include <string>

#include "core/tensor.h"
#include "engine/native/dtype.h"

namespace sd::native {

// Where a tensor's bytes live: host memory, or a backend's device (backend.h).
enum class DeviceKind : uint8_t { kHost, kCuda, kTest };
struct Device {
  DeviceKind kind = DeviceKind::kHost;
  int index = 0;
  bool is_host() const { return kind == DeviceKind::kHost; }
  std::string str() const;  // "host", "cuda:0", "test:0"
  bool operator==(const Device&) const = default;
};

struct TensorRef {
  TensorRef() = default;
  TensorRef(DType dtype_, const Shape& shape_, void* data_, Device device_ = {})
      : dtype(dtype_), shape(shape_), data(data_), device(device_) {}

  DType dtype = DType::kUndefined;
  Shape shape;
  void* data = nullptr;
  Device device;  // where `data` points

  int64_t numel() const { return shape.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  template <class T> T* as() const { return static_cast<T*>(data); }
};

class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(DType dtype, const Shape& shape);  // zero-filled
  // A tensor holding a copy of `bytes` (exactly numel * element size of them).
  static HostTensor copy_of(DType dtype, const Shape& shape, const void* bytes);
  // A tensor over bytes owned by `owner` (e.g. one slab holding all of a model's weights); the
  // bytes must be 64-byte aligned and padded to a multiple of 64, as HostTensor's own are.
  static HostTensor over(DType dtype, const Shape& shape, std::shared_ptr<unsigned char> owner, unsigned char* bytes);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool empty() const { return !storage_; }
  void* data() { return storage_.get(); }
  const void* data() const { return storage_.get(); }
  template <class T> T* as() { return static_cast<T*>(data()); }
  template <class T> const T* as() const { return static_cast<const T*>(data()); }
  TensorRef ref() const { return TensorRef{dtype_, shape_, storage_.get()}; }
  // The owner of the bytes (shared by copies and by the tensors of one weight slab).
  std::shared_ptr<const unsigned char> storage() const { return storage_; }

  HostTensor clone() const;
  // Same bytes, another shape of the same numel (shares the buffer).
  HostTensor reshaped(const Shape& shape) const;
  // Any integer tensor as int64 values (shape inputs of Reshape, Slice, ...).
  std::vector<int64_t> to_int64_vector() const;
  // float32 copy of any numeric tensor.
  std::vector<float> to_float_vector() const;

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  std::shared_ptr<unsigned char> storage_;
};

}  // namespace sd::native
