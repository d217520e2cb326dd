#include "runtime/frame_detector.h"

#include <cmath>
#include <cstdio>

#include "runtime/worker_plan.h"

namespace sd {
namespace {

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

Status check_model_options(const ModelOptions& o) {
  if (!(o.conf >= 0 && o.conf <= 1))
    return fail(ErrorCode::kUsage, "conf: must be a number in [0, 1], got " + number_text(o.conf));
  if (!(o.iou > 0 && o.iou <= 1))
    return fail(ErrorCode::kUsage, "iou: must be a number in (0, 1], got " + number_text(o.iou));
  if (o.threads < 0 || o.threads > kMaxThreads)
    return fail(ErrorCode::kUsage, "threads: must be a whole number from 0 to " + std::to_string(kMaxThreads) + ", got " +
                                       std::to_string(o.threads));
  return ok();
}

Result<std::unique_ptr<FrameDetector>> FrameDetector::load(const ModelOptions& options, bool rgb, bool size_from_first_frame) {
  SD_TRY(check_model_options(options));
  std::unique_ptr<FrameDetector> fd(new FrameDetector(options, rgb));
  SD_ASSIGN_OR_RETURN(Detector det, load_detector(options, cv::Size()));
  fd->adopt(std::move(det));
  // Only "auto" on a model that takes any size waits for the first frame to size the network.
  fd->size_settled_ =
      !size_from_first_frame || options.input_size != "auto" || !fd->det_.engine->capabilities().dynamic_input_size;
  return fd;
}

void FrameDetector::adopt(Detector det) {
  // A context must not outlive its engine: drop the old one before the old engine goes.
  post_.reset();
  context_.reset();
  det_ = std::move(det);
  if (rgb_) {
    // The preprocessor reads frames as BGR and swaps to RGB when the model wants RGB: for RGB frames
    // the opposite order gives the same network input.
    det_.preprocess.order = det_.preprocess.order == ChannelOrder::kRgb ? ChannelOrder::kBgr : ChannelOrder::kRgb;
  }
  context_ = std::move(det_.first_context);
  post_ = std::make_unique<Postprocessor>(det_.decoder, det_.decode, det_.nms);
  input_.resize(Shape{1, 3, det_.input_size.height, det_.input_size.width});
}

// As `streamdet run` does, an "auto" input size on a dynamic model follows the first frame's size
// (rounded up to the stride); later frames of other sizes are letterboxed into it.
Status FrameDetector::settle_input_size(cv::Size frame_size) {
  size_settled_ = true;
  SD_ASSIGN_OR_RETURN(cv::Size wanted, resolve_input_size(options_.input_size, *det_.engine, det_.model, frame_size));
  if (wanted == det_.input_size) return ok();
  SD_ASSIGN_OR_RETURN(Detector det, load_detector(options_, frame_size));
  adopt(std::move(det));
  return ok();
}

Result<Detections> FrameDetector::detect(const cv::Mat& frame) {
  if (frame.empty() || frame.type() != CV_8UC3)
    return fail(ErrorCode::kUsage, "frame: expected an 8-bit image of 3 channels");
  if (!size_settled_) SD_TRY(settle_input_size(frame.size()));
  const LetterboxTransform transform = preprocess_frame(frame, det_.input_size, det_.preprocess, input_.data(), scratch_);
  SD_TRY(context_->infer(input_.view(), outputs_));
  views_.clear();
  for (const Tensor& t : outputs_) views_.push_back(t.view());
  Detections detections;
  post_->run(views_, 0, detections);
  for (Detection& d : detections) transform.map_back(d);
  return detections;
}

Result<std::vector<Detections>> FrameDetector::detect_batch(const std::vector<cv::Mat>& frames) {
  std::vector<Detections> all;
  all.reserve(frames.size());
  if (frames.size() < 2 || !batch_capable()) {
    for (const cv::Mat& f : frames) {
      SD_ASSIGN_OR_RETURN(Detections d, detect(f));
      all.push_back(std::move(d));
    }
    return all;
  }
  for (const cv::Mat& f : frames)
    if (f.empty() || f.type() != CV_8UC3) return fail(ErrorCode::kUsage, "frame: expected an 8-bit image of 3 channels");
  if (!size_settled_) SD_TRY(settle_input_size(frames[0].size()));
  // The frames' planes side by side in one NCHW tensor, as the pipeline's micro-batches.
  const int n = static_cast<int>(frames.size());
  batch_input_.resize(Shape{n, 3, det_.input_size.height, det_.input_size.width});
  const size_t per = static_cast<size_t>(3) * static_cast<size_t>(det_.input_size.area());
  transforms_.clear();
  for (int i = 0; i < n; ++i)
    transforms_.push_back(preprocess_frame(frames[static_cast<size_t>(i)], det_.input_size, det_.preprocess,
                                           batch_input_.data() + static_cast<size_t>(i) * per, scratch_));
  SD_TRY(context_->infer(batch_input_.view(), outputs_));
  views_.clear();
  for (const Tensor& t : outputs_) views_.push_back(t.view());
  for (int i = 0; i < n; ++i) {
    Detections detections;
    post_->run(views_, i, detections);
    for (Detection& d : detections) transforms_[static_cast<size_t>(i)].map_back(d);
    all.push_back(std::move(detections));
  }
  return all;
}

}  // namespace sd
