// YOLOv5/v7 head: one output [N, A, 5+nc]; per anchor cx, cy, w, h in network-input pixels,
// objectness and nc class scores (sigmoid already applied). score = objectness * class score,
// best class only. Anchors whose objectness is below the threshold are skipped before the class
// scan (class scores are probabilities <= 1, so their score cannot reach it either), which is
// the candidate filter Ultralytics' own NMS applies.
#pragma once

#include "postprocess/decoder.h"

namespace sd {

struct YoloV5Head {
  int output = 0;
  int num_classes = 0;
};

class YoloV5Decoder final : public Decoder {
 public:
  explicit YoloV5Decoder(YoloV5Head head) : head_(head) {}
  Layout layout() const override { return Layout::kYoloV5; }
  int num_classes() const override { return head_.num_classes; }
  const YoloV5Head& head() const { return head_; }
  void decode(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
              Detections& out) const override;

 private:
  YoloV5Head head_;
};

}  // namespace sd
