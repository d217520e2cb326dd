#include "runtime/pipeline.h"

#include <algorithm>

#include "core/log.h"
#include "postprocess/postprocessor.h"
#include "preprocess/letterbox.h"
#include "runtime/detector.h"
#include "runtime/interrupt.h"
#include "runtime/progress.h"
#include "sinks/annotate.h"
#include "sinks/jsonl_sink.h"
#include "sinks/video_sink.h"
#include "sources/source.h"

namespace sd {

namespace {

// Owns the sinks and finalizes them exactly once, also when the run ends on an error.
class SinkSet {
 public:
  ~SinkSet() { (void)finish(); }
  void add(std::unique_ptr<Sink> sink) { sinks_.push_back(std::move(sink)); }
  Status write(const FrameResult& r) {
    for (auto& s : sinks_) SD_TRY(s->write(r));
    return ok();
  }
  Status finish() {
    Status first = ok();
    for (auto& s : sinks_) {
      auto st = s->finish();
      if (!st && first) first = st;
    }
    sinks_.clear();
    return first;
  }

 private:
  std::vector<std::unique_ptr<Sink>> sinks_;
};

}  // namespace

RunOutcome run_detection(const RunOptions& options) {
  RunOutcome outcome;
  auto failed = [&](Error e) {
    outcome.status = tl::unexpected(std::move(e));
    return std::move(outcome);
  };
  if (options.sources.size() != 1)
    return failed(Error{ErrorCode::kUsage, "expected exactly one --source, got " + std::to_string(options.sources.size())});

  auto source_r = open_source(options.sources[0]);
  if (!source_r) return failed(source_r.error());
  std::unique_ptr<Source> source = std::move(*source_r);
  const SourceInfo& info = source->info();

  auto det_r = load_detector(options.model, cv::Size(info.width, info.height));
  if (!det_r) return failed(det_r.error());
  Detector& det = *det_r;
  log_info("model %s: engine %s, layout %s, %d classes, input %dx%d, preprocess %s", options.model.model.c_str(),
           det.engine->name().c_str(), std::string(layout_name(det.decoder->layout())).c_str(),
           det.decoder->num_classes(), det.input_size.width, det.input_size.height, det.preprocess.str().c_str());

  // Outputs are opened before the first frame so that a bad path fails fast.
  SinkSet sinks;
  VideoSink* video = nullptr;
  if (!options.output.empty()) {
    auto v = VideoSink::open(options.output, info.fps, info.width, info.height);
    if (!v) return failed(v.error());
    video = v->get();
    sinks.add(std::move(*v));
  }
  if (!options.detections.empty()) {
    auto j = JsonlSink::open(options.detections, info.uri, det.class_names);
    if (!j) return failed(j.error());
    sinks.add(std::move(*j));
  }

  Profiler profiler;
  StageRecorder& rec = profiler.make_recorder("pipeline");
  ProgressLine progress(!options.quiet);
  outcome.started = true;
  profiler.start();

  Tensor input(Shape{1, 3, det.input_size.height, det.input_size.width});
  std::vector<Tensor> outputs;
  std::vector<TensorView> views;
  PreprocessScratch scratch;
  Postprocessor post(det.decoder, det.decode, det.nms);
  FrameResult result;
  result.detections.reserve(static_cast<size_t>(std::max(det.nms.max_det, 16)));
  int64_t processed = 0;
  const int64_t total = options.max_frames >= 0 && info.frame_count >= 0
                            ? std::min(options.max_frames, info.frame_count)
                            : (options.max_frames >= 0 ? options.max_frames : info.frame_count);

  Status status = ok();
  while (true) {
    if (interrupt_requested()) {
      status = fail(ErrorCode::kInterrupted, "interrupted after " + std::to_string(processed) + " frames");
      break;
    }
    if (options.max_frames >= 0 && processed >= options.max_frames) break;

    Frame& frame = result.frame;
    Result<bool> got;
    {
      ScopedStage s(rec, Stage::kRead);
      got = source->read(frame);
    }
    if (!got) {
      if (got.error().code == ErrorCode::kCorruptFrame) {
        profiler.count_corrupt_frame();
        log_warn("%s; skipped", got.error().message.c_str());
        continue;
      }
      status = tl::unexpected(got.error());
      break;
    }
    if (!*got) break;

    LetterboxTransform transform;
    {
      ScopedStage s(rec, Stage::kPreprocess);
      transform = preprocess_frame(frame.image, det.input_size, det.preprocess, input.data(), scratch);
    }
    {
      ScopedStage s(rec, Stage::kInference);
      status = det.first_context->infer(input.view(), outputs);
    }
    if (!status) break;
    {
      ScopedStage s(rec, Stage::kPostprocess);
      views.clear();
      for (const auto& t : outputs) views.push_back(t.view());
      post.run(views, 0, result.detections);
      for (Detection& d : result.detections) transform.map_back(d);
    }
    if (video) {
      ScopedStage s(rec, Stage::kDraw);
      draw_detections(frame.image, result.detections, det.class_names);
    }
    {
      ScopedStage s(rec, Stage::kWrite);
      status = sinks.write(result);
    }
    if (!status) break;
    ++processed;
    profiler.count_frame_done();
    progress.update(processed, total);
  }
  progress.finish();
  auto finish_status = sinks.finish();
  profiler.stop();
  outcome.profile = profiler.report();
  if (status && !finish_status) status = finish_status;
  if (status && processed == 0 && outcome.profile.corrupt_frames > 0)
    status = fail(ErrorCode::kSource, "source " + info.uri + ": no frame could be decoded");
  outcome.status = status;
  return outcome;
}

}  // namespace sd
