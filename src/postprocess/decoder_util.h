// Small helpers shared by the decoders (not part of the public interface).
#pragma once

#include <cmath>
#include <span>

#include "core/detection.h"
#include "core/tensor.h"

namespace sd::detail {

inline float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

// The logit of a probability threshold, lowered by a small margin: a raw value below it can never
// reach `p` after the sigmoid, so the exact test only runs for the few values above it.
inline float logit_floor(float p) {
  if (p <= 0.f) return -INFINITY;
  if (p >= 1.f) return INFINITY;
  return std::log(p / (1.f - p)) - 1e-3f;
}

inline Detection box_from_center(float cx, float cy, float w, float h, float score, int class_id) {
  return Detection{cx - 0.5f * w, cy - 0.5f * h, cx + 0.5f * w, cy + 0.5f * h, score, class_id};
}

// The output `index` when it exists, has `rank` dims and holds image `batch`; nullptr otherwise.
// Decoders were built for the shapes of a probe inference; a tensor that no longer fits yields
// no candidates instead of reading out of bounds.
inline const TensorView* batch_view(std::span<const TensorView> outputs, int index, int rank, int batch) {
  if (index < 0 || index >= static_cast<int>(outputs.size())) return nullptr;
  const TensorView& v = outputs[static_cast<size_t>(index)];
  if (v.data == nullptr || v.shape.rank != rank || batch < 0 || batch >= v.shape[0]) return nullptr;
  return &v;
}

}  // namespace sd::detail
