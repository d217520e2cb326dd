// A bounded multi-producer multi-consumer queue: the explicit thread boundary between stages.
// The policy says what a push does when the queue is full:
//   kBlock      waits for room (lossless: files)
//   kDropOldest evicts the oldest item to make room (live sources that tolerate a backlog)
//   kLatest     capacity 1, a new item replaces the waiting one (live: always the freshest)
// Evicted items are handed back to the caller (so a pool can recycle them and the drop be counted).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>

#include "runtime/ring.h"
#include <vector>

namespace sd {

enum class QueuePolicy { kBlock, kDropOldest, kLatest };

template <class T>
class BoundedQueue {
 public:
  BoundedQueue(size_t capacity, QueuePolicy policy)
      : capacity_(policy == QueuePolicy::kLatest ? 1 : (capacity ? capacity : 1)), policy_(policy), items_(capacity_) {}

  struct PushResult {
    bool accepted = false;     // false only when the queue was closed
    std::optional<T> evicted;  // the item dropped to make room (kDropOldest / kLatest)
    std::optional<T> refused;  // the pushed item, handed back when the queue was closed
    double blocked_ms = 0;     // time spent waiting for room (kBlock)
  };

  PushResult push(T item) {
    PushResult r;
    std::unique_lock<std::mutex> lock(mutex_);
    if ((policy_ == QueuePolicy::kBlock || block_when_full_) && items_.size() >= capacity_ && !closed_) {
      auto t0 = std::chrono::steady_clock::now();
      not_full_.wait(lock, [&] { return items_.size() < capacity_ || closed_; });
      r.blocked_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    if (closed_) {
      r.refused.emplace(std::move(item));
      return r;
    }
    if (items_.size() >= capacity_) {
      r.evicted.emplace(items_.pop_front());
      ++dropped_;
    }
    items_.push_back(std::move(item));
    high_water_ = std::max(high_water_, items_.size());
    r.accepted = true;
    lock.unlock();
    not_empty_.notify_one();
    return r;
  }

  // Waits for an item; nullopt once the queue is closed and drained.
  std::optional<T> pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    not_empty_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return std::nullopt;
    T item = items_.pop_front();
    lock.unlock();
    not_full_.notify_one();
    return item;
  }

  // Waits for one item, then gathers up to `max_items` in total, waiting at most `wait` after the
  // first for more to arrive. Returns an empty vector once closed and drained.
  void pop_batch(size_t max_items, std::chrono::microseconds wait, std::vector<T>& out) {
    out.clear();
    std::unique_lock<std::mutex> lock(mutex_);
    not_empty_.wait(lock, [&] { return !items_.empty() || closed_; });
    auto deadline = std::chrono::steady_clock::now() + wait;
    while (out.size() < max_items) {
      if (items_.empty()) {
        if (closed_ || wait.count() <= 0) break;
        if (!not_empty_.wait_until(lock, deadline, [&] { return !items_.empty() || closed_; })) break;
        if (items_.empty()) break;
      }
      out.push_back(items_.pop_front());
      not_full_.notify_one();
    }
  }

  // From now on a push into a full queue waits for room whatever the policy: on a stop request
  // the frames read are finished, none is dropped to make room for another.
  void block_when_full() {
    std::lock_guard<std::mutex> lock(mutex_);
    block_when_full_ = true;
  }

  // Wakes everyone; pushes are refused from now on, pops drain what is left.
  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  // Removes everything left (after close, to recycle items on an aborted run).
  std::vector<T> drain() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<T> out;
    while (!items_.empty()) out.push_back(items_.pop_front());
    not_full_.notify_all();
    return out;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return items_.size();
  }
  size_t capacity() const { return capacity_; }
  size_t high_water() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return high_water_;
  }
  int64_t dropped() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return dropped_;
  }
  QueuePolicy policy() const { return policy_; }

 private:
  const size_t capacity_;
  const QueuePolicy policy_;
  mutable std::mutex mutex_;
  std::condition_variable not_empty_, not_full_;
  Ring<T> items_;  // fixed capacity: no allocation after construction
  size_t high_water_ = 0;
  int64_t dropped_ = 0;
  bool closed_ = false;
  bool block_when_full_ = false;
};

}  // namespace sd
