// What the stages of one run share: the options, the loaded detector, the sources with their
// queues, the sinks, the packet pool, the scheduler, the profiler, and the run's fate (the first
// error stops every stage). Each stage (runtime/stages/) is an object holding a reference to it;
// the pipeline (runtime/pipeline.cpp) builds it, wires the stages and finalizes the outputs.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "analytics/lines_zones.h"
#include "core/error.h"
#include "core/frame_outcome.h"
#include "runtime/bounded_queue.h"
#include "runtime/detector.h"
#include "runtime/frame_packet.h"
#include "runtime/frame_scheduler.h"
#include "runtime/live_view.h"
#include "runtime/postprocess_on.h"
#include "runtime/profiler.h"
#include "runtime/run_options.h"
#include "runtime/source_health.h"
#include "sinks/sink.h"
#include "sources/source.h"

namespace sd {

struct SourceLane {
  std::unique_ptr<Source> source;
  SourceInfo info;
  QueuePolicy policy = QueuePolicy::kBlock;
  std::unique_ptr<BoundedQueue<PacketPtr>> raw;   // read -> preprocess
  std::unique_ptr<BoundedQueue<PacketPtr>> done;  // inference -> output (capacity = pool: never blocks)
  std::unique_ptr<track::ByteTracker> tracker;    // with --track (runtime/tracking.h); used by the output thread only
  std::unique_ptr<PlaceCounter> counter;          // with --line / --zone on this source; updated by the output thread
};

// Spans kept per thread when only the --report needs them (no --trace): the page shows at most
// a few hundred thousand, and a camera watched for days must not grow a span list for days
// (4 million spans a thread, as for a trace, would be ~190 MB each).
inline constexpr size_t kReportSpansPerThread = 100'000;

class RunContext {
 public:
  explicit RunContext(const RunOptions& o)
      : options(o),
        profiler(!o.trace.empty() || !o.report.empty(), o.trace.empty() ? kReportSpansPerThread : size_t{4'000'000}) {
    profiler.set_health(&health);
  }

  const RunOptions& options;
  Profiler profiler;
  Detector det;
  std::vector<SourceLane> lanes;
  HealthBoard health;  // one slot per source, in source order
  std::vector<std::unique_ptr<Sink>> sinks;
  bool draw = false;  // a sink wants the detections drawn on the frame
  bool keep_undrawn = false;  // and another wants the frame as decoded (Sink::wants_undrawn_frame)
  // A sink needs every frame's pixels on the host (drawn or not): a frame kept on the GPU
  // (Frame::device) is downloaded for it in the output stage; without such a sink it never is.
  bool sinks_need_pixels = false;
  std::unique_ptr<PacketPool> pool;
  std::unique_ptr<FrameScheduler> scheduler;
  std::unique_ptr<LiveView> view;
  int batch = 1;
  bool frames_on_gpu = false;  // --preprocess-on: the workers letterbox on their GPU (runtime/preprocess_on.h)
  PostprocessPlace postprocess;  // --postprocess-on: where the workers decode (runtime/postprocess_on.h)
  int workers = 1;
  std::atomic<int64_t> frames_done{0};

  // The first failure wins; every stage stops, the outputs are still finalized.
  void fail_run(const Error& e);
  // A stop request's drain took longer than --drain-timeout: every stage stops as after a failure
  // (the frames in flight are dropped, a Redis source leaves them pending), with no error of its own.
  void cut_short();
  bool stopping() const;
  // Ctrl-C, SIGTERM or the live view's q: stop reading, finish the frames in flight.
  bool stop_requested() const;
  // A stage failed, or the drain was cut short: frames in flight are dropped, not written (after
  // a stop request alone they are still finished).
  bool aborted() const { return abort_; }
  bool was_cut_short() const { return cut_short_; }
  std::optional<Error> first_error() const;
  void quit_by_user() { user_quit_ = true; }
  // A stop request of the program that embeds the run (pipeline.h's RunEmbedding); set before the
  // stage threads start.
  std::function<bool()> embedder_stop;

  // The end of a frame's journey, one of these exactly once per frame read (a packet without a
  // frame goes back with pool->release): its source is told the outcome, the packet goes back.
  // drop() also counts the drop for the profile and, with `rec`, at `stage`.
  void drop(PacketPtr packet, DropReason reason, StageRecorder* rec = nullptr, Stage stage = Stage::kRead);
  void settle(PacketPtr packet, FrameOutcome outcome);

  // A thread's body: an exception (a library failing in a way no check foresaw) ends the run with
  // one line and exit 1, outputs finalized, instead of std::terminate.
  template <class F>
  void guarded(const char* thread, F&& body) {
    try {
      body();
      StageRecorder::finish_thread();
    } catch (const std::bad_alloc&) {
      fail_run(Error{ErrorCode::kInternal, std::string("out of memory in the ") + thread + " thread (please report it)"});
    } catch (const std::exception& e) {
      fail_run(Error{ErrorCode::kInternal, std::string("internal error in the ") + thread + " thread: " + e.what()});
    }
  }

 private:
  void stop_every_stage();

  std::atomic<bool> abort_{false}, user_quit_{false}, cut_short_{false};
  mutable std::mutex error_mutex_;
  std::optional<Error> error_;
};

double ms_since(Clock::time_point t0);

}  // namespace sd
