// YOLOv8/v9/v11 head: one output [N, 4+nc, A] (channel-major, as Ultralytics exports it) or its
// transpose [N, A, 4+nc]; per anchor cx, cy, w, h in network-input pixels and nc class scores
// (sigmoid already applied, no objectness). One candidate per anchor: the best class.
#pragma once

#include "postprocess/decoder.h"

namespace sd {

struct YoloV8Head {
  int output = 0;           // index of the head among the model outputs
  int num_classes = 0;
  bool transposed = false;  // [N, A, 4+nc] instead of [N, 4+nc, A]
};

class YoloV8Decoder final : public Decoder {
 public:
  explicit YoloV8Decoder(YoloV8Head head) : head_(head) {}
  Layout layout() const override { return Layout::kYoloV8; }
  int num_classes() const override { return head_.num_classes; }
  const YoloV8Head& head() const { return head_; }
  void decode(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
              Detections& out) const override;
  // The same decode written plainly (per anchor, loop over classes): the tests' oracle.
  void decode_plain(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
                    Detections& out) const;

 private:
  YoloV8Head head_;
};

}  // namespace sd
