// Decode + NMS for one image: shares the (immutable) decoder, owns the NMS scratch and the candidate buffer, so a
// frame in steady state allocates nothing. One Postprocessor per thread (not thread-safe).
#pragma once

#include <memory>
#include <span>

#include "postprocess/decoder.h"
#include "postprocess/nms.h"

namespace sd {

class Postprocessor {
 public:
  Postprocessor(std::shared_ptr<const Decoder> decoder, const DecodeOptions& decode, const NmsOptions& nms);

  // Replaces `out` with the detections of image `batch_index` (network-input pixels, highest
  // score first, at most max_det). Models with NMS inside skip ours but still honour max_det.
  void run(std::span<const TensorView> outputs, int batch_index, Detections& out);

  const Decoder& decoder() const { return *decoder_; }
  const DecodeOptions& decode_options() const { return decode_; }
  const NmsOptions& nms_options() const { return nms_options_; }

 private:
  std::shared_ptr<const Decoder> decoder_;
  DecodeOptions decode_;
  NmsOptions nms_options_;
  Nms nms_;
  Detections candidates_;
};

}  // namespace sd
