#include "postprocess/postprocessor.h"

#include <algorithm>

namespace sd {

Postprocessor::Postprocessor(std::shared_ptr<const Decoder> decoder, const DecodeOptions& decode, const NmsOptions& nms)
    : decoder_(std::move(decoder)), decode_(decode), nms_options_(nms) {}

void Postprocessor::run(std::span<const TensorView> outputs, int batch_index, Detections& out) {
  candidates_.clear();
  decoder_->decode(outputs, batch_index, decode_, candidates_);
  if (decoder_->nms_in_model()) {
    // The model's own order, cut to max_det (its rows are already the kept boxes).
    if (nms_options_.max_det > 0 && candidates_.size() > static_cast<size_t>(nms_options_.max_det))
      candidates_.resize(static_cast<size_t>(nms_options_.max_det));
  } else {
    nms_.run(candidates_, nms_options_);
  }
  out.assign(candidates_.begin(), candidates_.end());
}

}  // namespace sd
