#include "runtime/run_context.h"

#include "runtime/interrupt.h"

namespace sd {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

void RunContext::fail_run(const Error& e) {
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = e;
  }
  stop_every_stage();
}

void RunContext::cut_short() {
  cut_short_ = true;
  stop_every_stage();
}

void RunContext::stop_every_stage() {
  abort_ = true;
  for (auto& l : lanes) {
    if (l.raw) l.raw->close();
    if (l.done) l.done->close();
  }
  if (scheduler) scheduler->abort();
  if (pool) pool->close();
}

bool RunContext::stopping() const { return abort_ || stop_requested(); }
bool RunContext::stop_requested() const {
  return user_quit_ || interrupt_requested() || (embedder_stop && embedder_stop());
}

std::optional<Error> RunContext::first_error() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return error_;
}

namespace {

FrameOutcome outcome_of(DropReason reason) {
  switch (reason) {
    case DropReason::kPolicy: return FrameOutcome::kPolicy;
    case DropReason::kEvery: return FrameOutcome::kEvery;
    case DropReason::kMaxAge: return FrameOutcome::kMaxAge;
    case DropReason::kCorrupt:  // no frame to drop: sources refuse corrupt frames in read()
    case DropReason::kAborted: break;
  }
  return FrameOutcome::kAborted;
}

}  // namespace

void RunContext::drop(PacketPtr packet, DropReason reason, StageRecorder* rec, Stage stage) {
  const int s = packet->frame.source_id;
  profiler.count_drop(s, reason);
  if (rec) rec->add_drop(stage);
  settle(std::move(packet), outcome_of(reason));
}

void RunContext::settle(PacketPtr packet, FrameOutcome outcome) {
  const auto s = static_cast<size_t>(packet->frame.source_id);
  if (s < lanes.size()) lanes[s].source->settle(packet->frame, outcome);
  pool->release(std::move(packet));
}

}  // namespace sd
