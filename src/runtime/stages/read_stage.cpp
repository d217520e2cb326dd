#include "runtime/stages/read_stage.h"

#include "core/log.h"
#include "runtime/nvtx.h"

namespace sd {

void ReadStage::run() {
  SourceLane& lane = run_.lanes[static_cast<size_t>(s_)];
  const std::string name = "reader " + std::to_string(s_);
  StageRecorder& rec = run_.profiler.make_recorder(name);
  nvtx_name_thread(name.c_str());
  const RunOptions& o = run_.options;
  int64_t read = 0, counter = 0;
  SourceHealth& health = run_.health.at(static_cast<size_t>(s_));
  bool failed = false, draining = false;
  while (true) {
    // A stop request ends the reading, but what the source fetched ahead (a Redis source's
    // entries) is still read and finished, unless the run was aborted or cut short meanwhile.
    if (run_.aborted() || (run_.stop_requested() && !lane.source->has_read_ahead())) break;
    if (run_.stop_requested() && !draining) {
      draining = true;
      lane.raw->block_when_full();  // frames read are finished now: none dropped to make room
    }
    if (o.max_frames >= 0 && read >= o.max_frames) break;
    auto t_acquire = Clock::now();
    PacketPtr p = run_.pool->acquire();
    if (!p) break;
    rec.add_blocked(Stage::kRead, ms_since(t_acquire));  // every packet in flight: back-pressure
    // What only some sources set, cleared from the packet's last frame.
    p->frame.origin.clear();
    p->frame.source_name.clear();
    p->frame.capture_wall_us = 0;
    p->frame.original_size = {};
    Result<bool> got;
    {
      NvtxRange range("read");
      const double cpu0 = thread_cpu_ms();
      auto t0 = Clock::now();
      got = lane.source->read(p->frame);
      // Time spent waiting for a frame to arrive (an empty Redis stream) is waiting, not work.
      const double idle_ms = lane.source->last_read_idle_ms();
      const Clock::time_point begin = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(idle_ms));
      rec.add_wait(Stage::kRead, idle_ms);
      p->entered[static_cast<size_t>(Stage::kRead)] = begin;
      // The end-of-stream read is not a frame: not counted as a hit.
      if (!got || *got) {
        rec.add(Stage::kRead, begin, std::max(begin, Clock::now()), 1, s_, p->frame.index);
        rec.add_cpu(Stage::kRead, thread_cpu_ms() - cpu0);
      }
    }
    if (!got) {
      run_.pool->release(std::move(p));  // no frame in it: nothing to settle
      if (got.error().code == ErrorCode::kCorruptFrame) {
        run_.profiler.count_drop(s_, DropReason::kCorrupt);
        rec.add_drop(Stage::kRead);
        log_warn("%s; skipped", got.error().message.c_str());
        continue;
      }
      health.outage(SourceState::kFailed, got.error().message);
      health.set_state(SourceState::kFailed);  // the outage ends with the source: its time counted
      failed = true;
      run_.fail_run(got.error());
      break;
    }
    if (!*got) {
      run_.pool->release(std::move(p));
      break;
    }
    ++read;
    health.frame_arrived();
    run_.profiler.count_read(s_);
    p->frame.source_id = s_;
    p->left[static_cast<size_t>(Stage::kRead)] = Clock::now();
    if (run_.view) run_.view->post_frame(s_, p->frame.bgr());
    if (o.every > 1 && counter++ % o.every != 0) {
      run_.drop(std::move(p), DropReason::kEvery, &rec, Stage::kRead);
      continue;
    }
    auto r = lane.raw->push(std::move(p));
    rec.add_blocked(Stage::kRead, r.blocked_ms);
    if (r.evicted) run_.drop(std::move(*r.evicted), DropReason::kPolicy, &rec, Stage::kRead);
    if (r.refused) run_.drop(std::move(*r.refused), DropReason::kAborted);
    if (!r.accepted) break;
  }
  if (!failed) health.set_state(SourceState::kEnded);
  lane.raw->close();
}

}  // namespace sd
