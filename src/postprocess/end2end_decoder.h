// End-to-end heads (NMS inside the model), layout "yolov10":
//  - [N, K, 6]: x1, y1, x2, y2, score, class per row, network-input pixels (YOLOv10, and
//    Ultralytics exports with nms=True); rows below the threshold are padding or weak boxes.
//  - [K, 7]: batch index, x1, y1, x2, y2, class, score (YOLOv7 --end2end ONNX-Runtime export,
//    the NonMaxSuppression output gathered for the whole batch).
// nms_in_model() is true: the pipeline does not suppress again.
#pragma once

#include "postprocess/decoder.h"

namespace sd {

struct End2EndHead {
  int output = 0;
  bool with_batch_column = false;  // the [K, 7] form
  int num_classes = 0;             // from the metadata names; 0 when the model does not say
};

class End2EndDecoder final : public Decoder {
 public:
  explicit End2EndDecoder(End2EndHead head) : head_(head) {}
  Layout layout() const override { return Layout::kYoloV10; }
  int num_classes() const override { return head_.num_classes; }
  bool nms_in_model() const override { return true; }
  void decode(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
              Detections& out) const override;

 private:
  End2EndHead head_;
};

}  // namespace sd
