// Non-maximum suppression, class-aware (boxes of different classes never suppress each other)
// or agnostic. Fast path: sort once by score, greedy scan with early exit, scratch reused.
// nms_reference is the naive O(n^2) oracle the tests compare against.
//
// Both visit candidates by descending score, ties broken by ascending index in the input, and
// suppress a box when its IoU (sd::iou) with a kept box of the same class (any class when
// agnostic) is > iou_threshold, so both keep exactly the same boxes in the same order.
// Scores must not be NaN (decoders never emit one: NaN fails every threshold test).
#pragma once

#include <cstdint>
#include <vector>

#include "core/detection.h"

namespace sd {

struct NmsOptions {
  float iou_threshold = 0.45f;
  bool agnostic = false;
  int max_det = 300;  // <= 0: no limit
};

class Nms {
 public:
  // Replaces `dets` with the kept boxes, highest score first, at most max_det.
  // No heap allocation once the scratch has grown to the largest candidate count seen.
  void run(Detections& dets, const NmsOptions& options);

 private:
  std::vector<uint64_t> order_;  // sort keys: descending score in the high half, index in the low
  // The kept boxes as structure-of-arrays, so the overlap test runs over them in SIMD lanes.
  std::vector<float> kx1_, ky1_, kx2_, ky2_, karea_;
  std::vector<int> kclass_;
  Detections kept_;
};

Detections nms_reference(const Detections& candidates, const NmsOptions& options);

}  // namespace sd
