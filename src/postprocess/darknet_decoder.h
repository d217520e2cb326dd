// Darknet YOLO heads (YOLOv3/v4/v4-tiny, Yolo-Fastest, ...): one raw output per [yolo] layer,
// [N, na * (5 + nc), H, W], the output of the convolution feeding that layer. Channel
// n * (5 + nc) + k of anchor n holds tx, ty, tw, th, objectness, class scores. As Darknet's
// yolo_layer.c decodes them, with s = scale_x_y and the stride netw / W:
//   plain:      bx = (i + sigmoid(tx) * s - (s - 1) / 2) * stride, bw = exp(tw) * anchor_w,
//               objectness and class scores go through a sigmoid;
//   new_coords: the convolution already applied the logistic, so bx = (i + tx * s - (s - 1) / 2)
//               * stride, bw = tw^2 * 4 * anchor_w, scores used as they are.
// score = objectness * best class score (one candidate per anchor and cell, the best class).
#pragma once

#include <utility>
#include <vector>

#include "postprocess/decoder.h"

namespace sd {

struct DarknetHeadLayer {
  int output = 0;              // model output holding this layer's input
  std::vector<float> anchors;  // masked anchors w0, h0, w1, h1, ... in network-input pixels
  float scale_x_y = 1.f;
  bool new_coords = false;
};

struct DarknetHead {
  int num_classes = 0;
  std::vector<DarknetHeadLayer> layers;
  int input_width = 0, input_height = 0;  // used when DecodeOptions leaves them 0
};

class DarknetDecoder final : public Decoder {
 public:
  explicit DarknetDecoder(DarknetHead head) : head_(std::move(head)) {}
  Layout layout() const override { return Layout::kDarknet; }
  int num_classes() const override { return head_.num_classes; }
  void decode(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
              Detections& out) const override;
  const DarknetHead& head() const { return head_; }

 private:
  DarknetHead head_;
};

}  // namespace sd
