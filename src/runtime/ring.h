// A fixed-capacity FIFO ring: no allocation after construction (queues on the per-frame path).
#pragma once

#include <optional>
#include <utility>
#include <vector>

namespace sd {

template <class T>
class Ring {
 public:
  explicit Ring(size_t capacity) : slots_(capacity ? capacity : 1) {}
  size_t size() const { return count_; }
  size_t capacity() const { return slots_.size(); }
  bool empty() const { return count_ == 0; }
  bool full() const { return count_ == slots_.size(); }
  T& front() { return *slots_[head_]; }
  const T& front() const { return *slots_[head_]; }
  T pop_front() {
    T v = std::move(*slots_[head_]);
    slots_[head_].reset();
    head_ = (head_ + 1) % slots_.size();
    --count_;
    return v;
  }
  // Precondition: !full().
  void push_back(T v) {
    slots_[(head_ + count_) % slots_.size()].emplace(std::move(v));
    ++count_;
  }
  template <class F>
  void for_each(F f) {
    for (size_t i = 0; i < count_; ++i) f(*slots_[(head_ + i) % slots_.size()]);
  }

 private:
  std::vector<std::optional<T>> slots_;
  size_t head_ = 0, count_ = 0;
};

}  // namespace sd
