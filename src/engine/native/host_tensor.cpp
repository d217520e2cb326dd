#include "engine/native/host_tensor.h"

#include "engine/native/aligned_buffer.h"
#include "engine/native/numeric.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace sd::native {

std::string Device::str() const {
  switch (kind) {
    case DeviceKind::kHost: return "host";
    case DeviceKind::kCuda: return "cuda:" + std::to_string(index);
    case DeviceKind::kTest: return "test:" + std::to_string(index);
  }
  return "?";
}


namespace {
// `zero_from`: bytes before it are left for the caller to write (zeroing and then overwriting a
// large initializer costs a second pass over memory that has just been faulted in).
std::shared_ptr<unsigned char> allocate(size_t bytes, size_t zero_from) {
  const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  AlignedBytes p = allocate_aligned(rounded);
  if (!p) throw std::bad_alloc();
  zero_from = std::min(zero_from, rounded);
  std::memset(p.get() + zero_from, 0, rounded - zero_from);
  return std::shared_ptr<unsigned char>(p.release(), FreeDeleter{});
}

template <class T, class U>
void convert_all(const void* src, int64_t n, std::vector<U>& out) {
  const T* s = static_cast<const T*>(src);
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = saturate_cast<U>(s[i]);  // a model's NaN or 1e34 as an int: defined
}

template <class U>
void convert(DType dtype, const void* src, int64_t n, std::vector<U>& out) {
  switch (dtype) {
    case DType::kFloat32: convert_all<float>(src, n, out); break;
    case DType::kFloat64: convert_all<double>(src, n, out); break;
    case DType::kInt8: convert_all<int8_t>(src, n, out); break;
    case DType::kUInt8: convert_all<uint8_t>(src, n, out); break;
    case DType::kInt32: convert_all<int32_t>(src, n, out); break;
    case DType::kInt64: convert_all<int64_t>(src, n, out); break;
    case DType::kBool: convert_all<bool>(src, n, out); break;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kUndefined: break;  // not numeric for this purpose; left zero
  }
}
}  // namespace

HostTensor::HostTensor(DType dtype, const Shape& shape) : dtype_(dtype), shape_(shape) {
  int64_t n = shape.numel();
  storage_ = allocate(static_cast<size_t>(n < 0 ? 0 : n) * dtype_size(dtype), 0);
}

HostTensor HostTensor::copy_of(DType dtype, const Shape& shape, const void* bytes) {
  HostTensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  const size_t n = t.bytes();
  t.storage_ = allocate(n, n);
  if (n) std::memcpy(t.storage_.get(), bytes, n);
  return t;
}

HostTensor HostTensor::over(DType dtype, const Shape& shape, std::shared_ptr<unsigned char> owner, unsigned char* bytes) {
  HostTensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.storage_ = std::shared_ptr<unsigned char>(std::move(owner), bytes);
  return t;
}

HostTensor HostTensor::clone() const {
  if (!storage_) return HostTensor(dtype_, shape_);
  return copy_of(dtype_, shape_, data());
}

HostTensor HostTensor::reshaped(const Shape& shape) const {
  HostTensor view = *this;
  view.shape_ = shape;
  return view;
}

std::vector<int64_t> HostTensor::to_int64_vector() const {
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(numel(), 0)));
  convert(dtype_, data(), numel(), out);
  return out;
}

std::vector<float> HostTensor::to_float_vector() const {
  std::vector<float> out(static_cast<size_t>(std::max<int64_t>(numel(), 0)));
  convert(dtype_, data(), numel(), out);
  return out;
}

}  // namespace sd::native
