#include "runtime/stages/preprocess_stage.h"

#include "preprocess/letterbox.h"
#include "runtime/nvtx.h"

namespace sd {

void PreprocessStage::run() {
  SourceLane& lane = run_.lanes[static_cast<size_t>(s_)];
  const std::string name = "preprocess " + std::to_string(s_);
  StageRecorder& rec = run_.profiler.make_recorder(name);
  nvtx_name_thread(name.c_str());
  PreprocessScratch scratch;
  const Detector& det = run_.det;
  const Shape input_shape{1, 3, det.input_size.height, det.input_size.width};
  bool draining = false;
  while (true) {
    auto t_wait = Clock::now();
    std::optional<PacketPtr> item = lane.raw->pop();
    rec.add_wait(Stage::kPreprocess, ms_since(t_wait));
    if (!item) break;
    PacketPtr p = std::move(*item);
    rec.add_items_in(Stage::kPreprocess, 1);
    {
      ScopedStage st(rec, Stage::kPreprocess, 1, s_, p->frame.index);
      p->entered[static_cast<size_t>(Stage::kPreprocess)] = Clock::now();
      if (run_.frames_on_gpu) {
        // The worker letterboxes the frame on its GPU (inference_stage.cpp); the transform that maps
        // the boxes back is the host's, as preprocess_frame computes it.
        p->transform = LetterboxTransform::compute(p->frame.size(), det.input_size, det.preprocess.resize, det.preprocess.pad);
      } else {
        // Frames stay on the GPU only where the GPU letterboxes (Source::keep_frames_on_device);
        // should one come here all the same, it comes down first.
        if (Status host = p->frame.to_host(); !host) {
          run_.drop(std::move(p), DropReason::kAborted);
          run_.fail_run(host.error());
          break;
        }
        p->input.resize(input_shape);
        p->transform = preprocess_frame(p->frame, det.input_size, det.preprocess, p->input.data(), scratch);
      }
      p->left[static_cast<size_t>(Stage::kPreprocess)] = Clock::now();
    }
    if (!draining && run_.stop_requested()) {
      draining = true;
      run_.scheduler->block_when_full(s_);  // on a stop request frames are finished, none dropped to make room
    }
    auto r = run_.scheduler->push(s_, std::move(p));
    rec.add_blocked(Stage::kPreprocess, r.blocked_ms);
    if (r.evicted) {
      if (r.accepted)
        run_.drop(std::move(r.evicted), DropReason::kPolicy, &rec, Stage::kPreprocess);
      else
        run_.drop(std::move(r.evicted), DropReason::kAborted);
    }
    if (!r.accepted) break;
  }
  run_.scheduler->finish_lane(s_);
}

}  // namespace sd
