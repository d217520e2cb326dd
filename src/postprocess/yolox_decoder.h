// YOLOX head as the official exporter writes it (tools/export_onnx.py, decode_in_inference off):
// one output [N, A, 5+nc] holding the raw grid outputs of every level, levels in stride order
// (8, 16, 32; 64 for P6 models), cells row-major within a level. The exported head already
// applies the sigmoid to objectness and class scores; only the box needs decoding:
//   cx = (tx + gx) * stride, cy = (ty + gy) * stride, w = exp(tw) * stride, h = exp(th) * stride
// score = objectness * best class score, like YOLOv5 (objectness below the threshold skips).
#pragma once

#include <utility>
#include <vector>

#include "postprocess/decoder.h"

namespace sd {

struct YoloXHead {
  int output = 0;
  int num_classes = 0;
  std::vector<int> strides = {8, 16, 32};
  int input_width = 0, input_height = 0;  // used when DecodeOptions leaves them 0
};

// Number of grid cells over all levels for this input size (each level ceil(size / stride)).
int64_t grid_cells(int input_width, int input_height, const std::vector<int>& strides);

class YoloXDecoder final : public Decoder {
 public:
  explicit YoloXDecoder(YoloXHead head) : head_(std::move(head)) {}
  Layout layout() const override { return Layout::kYoloX; }
  int num_classes() const override { return head_.num_classes; }
  const YoloXHead& head() const { return head_; }
  void decode(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
              Detections& out) const override;

 private:
  YoloXHead head_;
};

}  // namespace sd
