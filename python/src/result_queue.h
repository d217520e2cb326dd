// What streamdet.run hands from the pipeline's threads to the Python iterator: each frame's
// results through a bounded queue (a sink of the run pushes, the iterator pops). A full queue
// holds the pipeline back (a slow Python loop slows the run, it does not drop frames); once the
// iterator is gone the sink discards, so the run never blocks on a reader that left.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/detection.h"
#include "sinks/sink.h"
#include "sinks/sink_factory.h"

namespace sd::python {

struct RunResult {
  std::string source;  // the source's URI as given (or the producer's name for a frame from the wire)
  int64_t frame_index = 0;
  double timestamp_ms = 0;
  Detections detections;
  std::shared_ptr<const std::vector<std::string>> names;  // the model's class names, by id
  cv::Mat frame;  // the frame as decoded, BGR, its own pixels (frames=True), else empty
};

class ResultQueue {
 public:
  explicit ResultQueue(size_t capacity) : capacity_(capacity) {}

  // The run's side: waits for room; false when the reader has gone (the result is dropped).
  bool push(RunResult result);
  // The run has ended: pop() says kEnd once the queue is empty.
  void end_of_run();

  enum class Pop { kResult, kTimedOut, kEnd };
  // The reader's side: the next result, waiting up to `wait` for one.
  Pop pop(RunResult& out, std::chrono::milliseconds wait);
  // The reader has gone: queued results are dropped and push() no longer waits.
  void reader_gone();

 private:
  const size_t capacity_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<RunResult> results_;
  bool ended_ = false, reader_gone_ = false;
};

// The sink the run writes every frame's detections to (after the outputs the user named).
class QueueSink : public Sink {
 public:
  // `frames`: each result carries a copy of its frame (as decoded, before any drawing).
  QueueSink(std::shared_ptr<ResultQueue> queue, const SinkContext& context, bool frames);
  std::string name() const override { return "python"; }
  bool wants_undrawn_frame() const override { return frames_; }
  Status write(const FrameResult& result) override;
  Status finish() override { return ok(); }  // the run's thread calls end_of_run() when run_detection returns

 private:
  std::shared_ptr<ResultQueue> queue_;
  std::vector<std::string> source_uris_;
  std::shared_ptr<const std::vector<std::string>> names_;
  bool frames_ = false;
};

}  // namespace sd::python
