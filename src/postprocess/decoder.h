// Decoders turn raw model outputs into candidate boxes (network-input pixels, above the
// confidence threshold), one decoder per head family. make_decoder picks the family from the
// output shapes and model metadata, or checks the one the user forced with --layout.
//
// How make_decoder recognises a layout (Layout::kAuto), G being the number of grid cells of the
// input size over strides 8/16/32 (or the metadata strides: 8..64 for P6 models):
//  - a Darknet cfg in ModelInfo                        -> darknet (one rank-4 output per [yolo]);
//  - two rank-3 outputs, one with a dim of 4 ([N,A,4] or [N,4,A]) and one sharing A -> ssd;
//  - one rank-3 output [N, d1, d2] (or one rank-3 output among others of other ranks):
//      d1 < d2                                         -> yolov8, nc = d1 - 4;
//      d2 == 6 and d1 is neither G nor 3G              -> yolov10 (end-to-end);
//      d1 == 3 * G                                     -> yolov5, nc = d2 - 5;
//      d1 == G                                         -> yolox,  nc = d2 - 5;
//    When the metadata lists class names (nn of them), they decide between the families:
//    d1 == 4 + nn -> yolov8, d2 == 4 + nn -> yolov8 transposed [N, A, 4+nc], d2 == 5 + nn ->
//    yolox if d1 == G else yolov5, d2 == 6 -> yolov10; no match is an error.
//  - one rank-2 output [K, 7]                          -> yolov10 (YOLOv7 end2end, batch column).
// SSD encodings: A == 8732 -> raw offsets against the SSD300 priors + softmax over logits, else
// decoded corners + probabilities. ONNX metadata may say otherwise: "ssd_boxes" = "corners" |
// "priors", "ssd_scores" = "probabilities" | "logits", "ssd_prior_order" = "size_major" (NVIDIA,
// the default for channel-first boxes [N,4,A]) | "position_major" (ssd.pytorch, the default for [N,A,4]).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/detection.h"
#include "core/error.h"
#include "core/tensor.h"
#include "engine/engine.h"
#include "model/model_info.h"
#include "postprocess/layout.h"

namespace sd {

struct DecodeOptions {
  float conf_threshold = 0.25f;
  int input_width = 0, input_height = 0;  // network input size the outputs correspond to (0: the
                                          // size given to make_decoder)
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual Layout layout() const = 0;
  // Classes the head scores (background excluded); 0 when the head does not say (end-to-end
  // outputs without metadata names).
  virtual int num_classes() const = 0;
  // True when the model already ran NMS (end-to-end exports): the pipeline skips its own.
  virtual bool nms_in_model() const { return false; }
  // Appends the candidates of image `batch_index` with score >= conf_threshold to `out`, boxes as
  // x1, y1, x2, y2 in network-input pixels. Outputs whose shapes no longer fit the ones the decoder
  // was made for (or a batch index out of range) yield no candidates.
  // Must not allocate once `out` has grown to its steady-state capacity.
  virtual void decode(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
                      Detections& out) const = 0;
};

// `outputs`: the engine's outputs with concrete shapes (from a probe inference at the chosen
// input size). On failure (kModel) the message lists the output names and shapes and suggests
// --layout.
Result<std::unique_ptr<Decoder>> make_decoder(Layout requested, const std::vector<TensorInfo>& outputs,
                                              const ModelInfo& model, int input_width, int input_height);

}  // namespace sd
