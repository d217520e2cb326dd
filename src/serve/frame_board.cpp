#include "serve/frame_board.h"

#include "core/log.h"

namespace sd {

FrameBoard::FrameBoard(size_t sources, double max_fps, int jpeg_quality)
    : slots_(sources),
      min_interval_(std::chrono::nanoseconds(static_cast<int64_t>(1e9 / (max_fps > 0 ? max_fps : 10.0)))),
      quality_(jpeg_quality) {}

bool FrameBoard::wants(int s, Clock::time_point now) {
  if (s < 0 || static_cast<size_t>(s) >= slots_.size()) return false;
  Slot& slot = slots_[static_cast<size_t>(s)];
  if (slot.watchers.load(std::memory_order_relaxed) == 0 || closed_) return false;
  return now - slot.last_post >= min_interval_;
}

void FrameBoard::post(int s, cv::Mat bgr) {
  if (s < 0 || static_cast<size_t>(s) >= slots_.size()) return;
  Slot& slot = slots_[static_cast<size_t>(s)];
  slot.last_post = Clock::now();
  {
    std::lock_guard<std::mutex> lock(slot.mutex);
    slot.frame = std::move(bgr);  // the previous frame is freed here, or by the encoder still holding it
    ++slot.sequence;
  }
  slot.posted.notify_all();
}

FrameBoard::Watch::Watch(FrameBoard& board, int s) : board_(board), s_(s) {
  board_.slots_[static_cast<size_t>(s_)].watchers.fetch_add(1);
}

FrameBoard::Watch::~Watch() { board_.slots_[static_cast<size_t>(s_)].watchers.fetch_sub(1); }

std::optional<FrameBoard::Jpeg> FrameBoard::next(int s, uint64_t after, std::chrono::milliseconds timeout) {
  if (s < 0 || static_cast<size_t>(s) >= slots_.size()) return std::nullopt;
  Slot& slot = slots_[static_cast<size_t>(s)];
  cv::Mat frame;  // shares the pixels: the sink's next post() swaps in a new Mat, never writes these
  uint64_t sequence = 0;
  {
    std::unique_lock<std::mutex> lock(slot.mutex);
    if (!slot.posted.wait_for(lock, timeout, [&] { return closed_ || slot.sequence > after; }) || closed_) return std::nullopt;
    frame = slot.frame;
    sequence = slot.sequence;
  }
  std::lock_guard<std::mutex> lock(slot.encode_mutex);
  if (slot.jpeg_sequence != sequence || !slot.jpeg) {
    auto jpeg = slot.encoder.encode(frame, quality_, /*fast_dct=*/true);
    if (!jpeg) {
      log_warn("web view: source %d: %s", s, jpeg.error().message.c_str());
      return std::nullopt;
    }
    slot.jpeg = std::make_shared<const std::string>(std::move(*jpeg));
    slot.jpeg_sequence = sequence;
  }
  return Jpeg{sequence, slot.jpeg};
}

void FrameBoard::close() {
  closed_ = true;
  for (auto& slot : slots_) {
    { std::lock_guard<std::mutex> lock(slot.mutex); }  // a waiter is either before its check or waiting: it sees closed_
    slot.posted.notify_all();
  }
}

}  // namespace sd
