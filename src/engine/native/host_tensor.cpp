#include "engine/native/host_tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace sd::native {

namespace {
std::shared_ptr<unsigned char> allocate_zeroed(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(64, rounded));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return std::shared_ptr<unsigned char>(p, [](unsigned char* q) { std::free(q); });
}

template <class T, class U>
void convert_all(const void* src, int64_t n, std::vector<U>& out) {
  const T* s = static_cast<const T*>(src);
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<U>(s[i]);
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
    case DType::kUndefined: break;  // not numeric for this purpose; left zero
  }
}
}  // namespace

HostTensor::HostTensor(DType dtype, const Shape& shape) : dtype_(dtype), shape_(shape) {
  int64_t n = shape.numel();
  storage_ = allocate_zeroed(static_cast<size_t>(n < 0 ? 0 : n) * dtype_size(dtype));
}

HostTensor HostTensor::clone() const {
  HostTensor copy(dtype_, shape_);
  if (storage_) std::memcpy(copy.data(), data(), bytes());
  return copy;
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
