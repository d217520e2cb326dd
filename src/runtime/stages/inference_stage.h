// One inference worker with its own execution context: takes micro-batches from the scheduler
// (across sources, oldest capture first), runs the model, decodes and maps the detections back to
// frame pixels, and hands each frame to its source's output queue. Frames older than --max-age
// when taken are dropped here.
#pragma once

#include <memory>

#include "runtime/run_context.h"

namespace sd {

class InferenceStage {
 public:
  InferenceStage(RunContext& run, int worker, std::unique_ptr<InferenceContext> context)
      : run_(run), w_(worker), context_(std::move(context)) {}
  void run();

 private:
  RunContext& run_;
  int w_;
  std::unique_ptr<InferenceContext> context_;
};

}  // namespace sd
