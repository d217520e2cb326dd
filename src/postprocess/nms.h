// Non-maximum suppression, class-aware (boxes of different classes never suppress each other)
// or agnostic. Fast path: sort once by score, greedy scan with early exit, scratch reused.
// nms_reference is the naive O(n^2) oracle the tests compare against.
#pragma once

#include <vector>

#include "core/detection.h"

namespace sd {

struct NmsOptions {
  float iou_threshold = 0.45f;
  bool agnostic = false;
  int max_det = 300;
};

class Nms {
 public:
  // Replaces `dets` with the kept boxes, highest score first, at most max_det.
  void run(Detections& dets, const NmsOptions& options);

 private:
  std::vector<int> order_;
  std::vector<unsigned char> removed_;
  Detections kept_;
};

Detections nms_reference(const Detections& candidates, const NmsOptions& options);

}  // namespace sd
