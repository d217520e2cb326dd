// Decoders turn raw model outputs into candidate boxes (network-input pixels, above the
// confidence threshold), one decoder per head family. make_decoder picks the family from the
// output shapes and model metadata, or checks the one the user forced with --layout.
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
  int input_width = 0, input_height = 0;  // network input size the outputs correspond to
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual Layout layout() const = 0;
  virtual int num_classes() const = 0;
  // True when the model already ran NMS (end-to-end exports): the pipeline skips its own.
  virtual bool nms_in_model() const { return false; }
  // Appends the candidates of image `batch_index` with score >= conf_threshold to `out`.
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
