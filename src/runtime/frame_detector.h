// One frame in, its detections out: the pipeline's preprocess, inference and postprocess stages
// (runtime/stages/*.cpp) for a single caller, without threads or queues. What the Python module's
// Detector wraps and `streamdet val` runs over a dataset.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "core/detection.h"
#include "core/error.h"
#include "core/tensor.h"
#include "postprocess/postprocessor.h"
#include "preprocess/letterbox.h"
#include "runtime/detector.h"
#include "runtime/run_options.h"

namespace sd {

// The limits the command's options check (app/cli.cpp) on conf, iou and threads, for the values
// Python hands over unchecked (kUsage, named as the Python arguments).
Status check_model_options(const ModelOptions& o);

class FrameDetector {
 public:
  // Loads the model as `streamdet run` does, after checking conf, iou and threads against the
  // command's limits (kUsage, named as the Python arguments). `rgb`: frames arrive RGB, not BGR.
  // `size_from_first_frame`: with --input-size auto, a model that takes any size runs at the first
  // frame's size (as `run` does); false: at the size the model declares (640x640 if none), for
  // frames of every size alike (as `val` runs a dataset).
  static Result<std::unique_ptr<FrameDetector>> load(const ModelOptions& options, bool rgb,
                                                     bool size_from_first_frame = true);

  // The detections of one 8-bit, 3-channel frame, in its pixels, highest score first.
  // Not thread-safe: one call at a time per FrameDetector (its buffers are reused).
  Result<Detections> detect(const cv::Mat& frame);
  // The detections of several frames (any sizes), in their order: one inference call for them
  // all when the model has a dynamic batch axis (batch_capable()), else one call per frame.
  Result<std::vector<Detections>> detect_batch(const std::vector<cv::Mat>& frames);
  bool batch_capable() const { return det_.engine->capabilities().dynamic_batch; }

  const std::vector<std::string>& class_names() const { return det_.class_names; }
  cv::Size input_size() const { return det_.input_size; }

 private:
  FrameDetector(ModelOptions options, bool rgb) : options_(std::move(options)), rgb_(rgb) {}
  void adopt(Detector det);
  Status settle_input_size(cv::Size frame_size);

  ModelOptions options_;
  bool rgb_ = false;
  bool size_settled_ = false;
  Detector det_;
  std::unique_ptr<InferenceContext> context_;
  std::unique_ptr<Postprocessor> post_;
  Tensor input_;
  Tensor batch_input_;
  std::vector<LetterboxTransform> transforms_;
  std::vector<Tensor> outputs_;
  std::vector<TensorView> views_;
  PreprocessScratch scratch_;
};

}  // namespace sd
