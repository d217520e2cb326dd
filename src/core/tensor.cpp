#include "core/tensor.h"

#include <cstdlib>
#include <limits>
#include <new>

namespace sd {

Shape::Shape(std::initializer_list<int64_t> d) {
  for (int64_t v : d) {
    if (rank == kMaxRank) break;
    dims[static_cast<size_t>(rank++)] = v;
  }
}

int64_t Shape::numel() const {
  int64_t n = 1;
  bool overflow = false;
  for (int i = 0; i < rank; ++i) {
    if (dims[static_cast<size_t>(i)] < 0) return -1;
    // A model may declare any dims (the fuzzer found [4.6e18, 6]): saturate instead of overflowing.
    if (__builtin_mul_overflow(n, dims[static_cast<size_t>(i)], &n)) overflow = true;
  }
  if (overflow) {
    for (int i = 0; i < rank; ++i)
      if (dims[static_cast<size_t>(i)] == 0) return 0;
    return std::numeric_limits<int64_t>::max();
  }
  return n;
}

bool Shape::is_static() const {
  for (int i = 0; i < rank; ++i)
    if (dims[static_cast<size_t>(i)] < 0) return false;
  return true;
}

bool Shape::operator==(const Shape& o) const {
  if (rank != o.rank) return false;
  for (int i = 0; i < rank; ++i)
    if (dims[static_cast<size_t>(i)] != o.dims[static_cast<size_t>(i)]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) {
    if (i) s += ", ";
    int64_t d = dims[static_cast<size_t>(i)];
    s += d < 0 ? std::string("?") : std::to_string(d);
  }
  return s + "]";
}

void Tensor::AlignedFree::operator()(float* p) const { std::free(p); }

void Tensor::resize(const Shape& shape) {
  shape_ = shape;
  int64_t n = shape.numel();
  if (n < 0) n = 0;
  if (n > capacity_) {
    size_t bytes = (static_cast<size_t>(n) * sizeof(float) + 63) / 64 * 64;
    auto* p = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (!p) throw std::bad_alloc();
    data_.reset(p);
    capacity_ = n;
  }
}

}  // namespace sd
