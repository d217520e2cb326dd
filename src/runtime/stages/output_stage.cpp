#include "runtime/stages/output_stage.h"

#include "runtime/nvtx.h"
#include "runtime/reorder_buffer.h"
#include "runtime/tracking.h"
#include "sinks/frame_overlay.h"

namespace sd {
namespace {

double stage_ms(const FramePacket& p, Stage stage) {
  const auto i = static_cast<size_t>(stage);
  if (p.entered[i] == Clock::time_point{} || p.left[i] < p.entered[i]) return 0;
  return std::chrono::duration<double, std::milli>(p.left[i] - p.entered[i]).count();
}

std::array<StageTiming, 4> stage_timings(const FramePacket& p) {
  return {StageTiming{"read", stage_ms(p, Stage::kRead)}, StageTiming{"preprocess", stage_ms(p, Stage::kPreprocess)},
          StageTiming{"inference", stage_ms(p, Stage::kInference)}, StageTiming{"postprocess", stage_ms(p, Stage::kPostprocess)}};
}

}  // namespace

Status OutputStage::write(FramePacket& p, StageRecorder& rec) {
  const float conf = run_.options.model.conf;
  SourceLane& lane = run_.lanes[static_cast<size_t>(s_)];
  std::vector<CountEvent> events;
  auto& tracker = lane.tracker;
  // A frame NVDEC left on the GPU comes down here, once, only when something below needs its
  // pixels (drawing, a sink that takes the frame, the tracker's appearance cue); the GPU is done
  // with it either way, and its buffer goes back to the decoder as soon as it is on the host.
  if (p.frame.format == PixelFormat::kDeviceNv12 && (run_.sinks_need_pixels || (tracker && tracker->options().appearance)))
    SD_TRY(p.frame.to_host());
  if (p.frame.format != PixelFormat::kDeviceNv12) p.frame.device.reset();
  if (tracker) {
    ScopedStage st(rec, Stage::kTrack, 1, s_, p.frame.index);
    track_frame(*tracker, p.detections, p.frame, conf);
    trails_.update(p.detections, p.frame.timestamp_ms);
    run_.profiler.set_tracks(s_, static_cast<int64_t>(tracker->live_track_count()), tracker->ids_issued());
    // Lines and zones, in frame order, by the frame's capture time (part of the track stage).
    if (lane.counter) lane.counter->update(p.detections, p.frame.index, p.frame.timestamp_ms, events);
  } else if (run_.det.decode.conf_threshold < conf) {
    keep_confident(p.detections, conf);  // decoded lower for another source's tracker
  }
  if (run_.view) run_.view->post_detections(s_, p.frame.original_size, p.detections, tracker ? &trails_ : nullptr, lane.counter.get());
  cv::Mat undrawn;
  if (run_.draw) {
    ScopedStage st(rec, Stage::kDraw, 1, s_, p.frame.index);
    if (run_.keep_undrawn) undrawn = p.frame.bgr().clone();
    const CountingReport counts = lane.counter ? lane.counter->counts() : CountingReport{};
    const FrameOverlay overlay{&p.detections, tracker ? &trails_ : nullptr,
                               lane.counter ? &lane.counter->places() : nullptr, lane.counter ? &counts : nullptr};
    draw_overlay(p.frame.bgr(), p.frame.original_size, overlay, run_.det.class_names);
  }
  ScopedStage st(rec, Stage::kWrite, 1, s_, p.frame.index);
  // FrameResult holds the frame by value; swap the packet's in and out to avoid copying pixels.
  FrameResult result;
  result.timings = stage_timings(p);
  result.events = std::move(events);
  result.counter = lane.counter.get();
  result.trails = tracker ? &trails_ : nullptr;
  result.undrawn = std::move(undrawn);
  std::swap(result.frame, p.frame);
  std::swap(result.detections, p.detections);
  // In the order they were named (the JSON lines before the video by default: when the video's
  // write fails, the video is dropped anyway; when the line's fails, the video stops at the same
  // frame as the lines).
  Status status = ok();
  for (auto& sink : run_.sinks) {
    status = sink->write(result);
    if (!status) break;
  }
  std::swap(result.frame, p.frame);
  std::swap(result.detections, p.detections);
  return status;
}

void OutputStage::run() {
  SourceLane& lane = run_.lanes[static_cast<size_t>(s_)];
  const std::string name = "sink " + std::to_string(s_);
  StageRecorder& rec = run_.profiler.make_recorder(name);
  nvtx_name_thread(name.c_str());
  ReorderBuffer reorder(run_.pool->size());
  while (true) {
    auto t_wait = Clock::now();
    std::optional<PacketPtr> item = lane.done->pop();
    rec.add_wait(Stage::kDraw, ms_since(t_wait));
    if (!item) break;
    rec.add_items_in(Stage::kDraw, 1);
    reorder.put(std::move(*item));
    while (PacketPtr p = reorder.take_next()) {
      if (run_.aborted()) {
        run_.drop(std::move(p), DropReason::kAborted);
        continue;
      }
      auto st = write(*p, rec);
      if (!st) {
        run_.settle(std::move(p), FrameOutcome::kFailed);
        run_.fail_run(st.error());
        break;
      }
      rec.add_frame_latency(ms_since(p->frame.capture_time));
      run_.profiler.count_frame_done(s_);
      ++run_.frames_done;
      run_.settle(std::move(p), FrameOutcome::kWritten);
    }
  }
  for (auto& p : reorder.release_all()) run_.drop(std::move(p), DropReason::kAborted);
}

}  // namespace sd
