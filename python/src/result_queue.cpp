#include "result_queue.h"

namespace sd::python {

bool ResultQueue::push(RunResult result) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return reader_gone_ || results_.size() < capacity_; });
  if (reader_gone_) return false;
  results_.push_back(std::move(result));
  changed_.notify_all();
  return true;
}

void ResultQueue::end_of_run() {
  std::lock_guard lock(mutex_);
  ended_ = true;
  changed_.notify_all();
}

ResultQueue::Pop ResultQueue::pop(RunResult& out, std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, wait, [&] { return !results_.empty() || ended_; })) return Pop::kTimedOut;
  if (results_.empty()) return Pop::kEnd;
  out = std::move(results_.front());
  results_.pop_front();
  changed_.notify_all();
  return Pop::kResult;
}

void ResultQueue::reader_gone() {
  std::lock_guard lock(mutex_);
  reader_gone_ = true;
  results_.clear();
  changed_.notify_all();
}

QueueSink::QueueSink(std::shared_ptr<ResultQueue> queue, const SinkContext& context, bool frames)
    : queue_(std::move(queue)), names_(std::make_shared<const std::vector<std::string>>(context.class_names)), frames_(frames) {
  for (const SinkSourceInfo& s : context.sources) source_uris_.push_back(s.uri);
}

Status QueueSink::write(const FrameResult& result) {
  const Frame& f = result.frame;
  RunResult r;
  if (!f.source_name.empty()) r.source = f.source_name;
  else if (f.source_id >= 0 && static_cast<size_t>(f.source_id) < source_uris_.size()) r.source = source_uris_[static_cast<size_t>(f.source_id)];
  else r.source = std::to_string(f.source_id);
  r.frame_index = f.index;
  r.timestamp_ms = f.timestamp_ms;
  r.detections = result.detections;
  r.names = names_;
  if (frames_) {
    // One copy, made here on the run's thread: the packet's buffers go back to the pipeline after
    // write(). A frame drawn on was copied before the drawing (result.undrawn, already our own);
    // an I420 frame's conversion to BGR is its copy.
    if (!result.undrawn.empty()) {
      r.frame = result.undrawn;
    } else {
      cv::Mat converted;
      const cv::Mat& bgr = f.bgr(converted);
      r.frame = &bgr == &converted ? converted : bgr.clone();
    }
  }
  queue_->push(std::move(r));  // false: the reader left, and the run is being stopped
  return ok();
}

}  // namespace sd::python
