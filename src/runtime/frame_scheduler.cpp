#include "runtime/frame_scheduler.h"

namespace sd {

FrameScheduler::FrameScheduler(const std::vector<LaneConfig>& lanes) {
  lanes_.reserve(lanes.size());
  for (const auto& c : lanes) lanes_.emplace_back(c);
}

FrameScheduler::PushResult FrameScheduler::push(int lane_index, PacketPtr packet) {
  PushResult r;
  std::unique_lock<std::mutex> lock(mutex_);
  Lane& lane = lanes_[static_cast<size_t>(lane_index)];
  if ((lane.config.policy == QueuePolicy::kBlock || lane.block_when_full) && lane.items.full() && !aborted_) {
    auto t0 = Clock::now();
    not_full_.wait(lock, [&] { return !lane.items.full() || aborted_; });
    r.blocked_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }
  if (aborted_) {
    r.evicted = std::move(packet);
    return r;
  }
  if (lane.items.full()) {
    r.evicted = lane.items.pop_front();  // kLatest / kDropOldest: the newest frame wins
    --queued_;
  }
  lane.items.push_back(std::move(packet));
  ++queued_;
  r.accepted = true;
  lock.unlock();
  not_empty_.notify_one();
  return r;
}

int FrameScheduler::oldest_lane() const {
  int best = -1;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (lanes_[i].items.empty()) continue;
    if (best < 0 || lanes_[i].items.front()->frame.capture_time <
                        lanes_[static_cast<size_t>(best)].items.front()->frame.capture_time)
      best = static_cast<int>(i);
  }
  return best;
}

bool FrameScheduler::all_finished_and_empty() const {
  for (const auto& l : lanes_)
    if (!l.finished || !l.items.empty()) return false;
  return true;
}

bool FrameScheduler::pop_batch(size_t max, std::chrono::microseconds batch_wait, std::chrono::microseconds max_age,
                               std::vector<PacketPtr>& out, std::vector<PacketPtr>& expired) {
  out.clear();
  expired.clear();
  std::unique_lock<std::mutex> lock(mutex_);
  not_empty_.wait(lock, [&] { return queued_ > 0 || aborted_ || all_finished_and_empty(); });
  if (aborted_ || queued_ == 0) return false;
  const auto deadline = Clock::now() + batch_wait;
  while (out.size() < max) {
    if (queued_ == 0) {
      if (aborted_ || all_finished_and_empty() || batch_wait.count() <= 0) break;
      if (!not_empty_.wait_until(lock, deadline, [&] { return queued_ > 0 || aborted_ || all_finished_and_empty(); }))
        break;
      if (aborted_ || queued_ == 0) break;
    }
    Lane& lane = lanes_[static_cast<size_t>(oldest_lane())];
    PacketPtr p = lane.items.pop_front();
    --queued_;
    not_full_.notify_all();
    if (max_age.count() > 0 && Clock::now() - p->frame.capture_time > max_age) {
      expired.push_back(std::move(p));
      continue;
    }
    p->sequence = lane.next_sequence++;
    out.push_back(std::move(p));
  }
  return !out.empty() || !expired.empty();
}

void FrameScheduler::finish_lane(int lane) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lanes_[static_cast<size_t>(lane)].finished = true;
  }
  not_empty_.notify_all();
}

void FrameScheduler::block_when_full(int lane) {
  std::lock_guard<std::mutex> lock(mutex_);
  lanes_[static_cast<size_t>(lane)].block_when_full = true;
}

void FrameScheduler::abort() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
  }
  not_empty_.notify_all();
  not_full_.notify_all();
}

std::vector<PacketPtr> FrameScheduler::drain() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<PacketPtr> out;
  for (auto& l : lanes_)
    while (!l.items.empty()) out.push_back(l.items.pop_front());
  queued_ = 0;
  return out;
}

std::vector<size_t> FrameScheduler::depths() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<size_t> out;
  for (const auto& lane : lanes_) out.push_back(lane.items.size());
  return out;
}

}  // namespace sd
