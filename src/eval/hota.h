// HOTA (Luiten et al., IJCV 2021), computed as TrackEval computes it: for each localization
// threshold alpha in 0.05, 0.10, ..., 0.95, detections are matched frame by frame by the
// Hungarian algorithm on IoU weighted by a global alignment score of the two identities (how much
// of their lives they overlap), the pairs with IoU >= alpha count; DetA = TP / (TP + FN + FP),
// AssA = the mean over true positives of TPA / (TPA + FNA + FPA) of their pair of identities,
// HOTA = sqrt(DetA x AssA); each figure is the mean over the 19 alphas. LocA is the mean IoU of
// the matches.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/detection.h"

namespace sd::eval {

struct HotaMetrics {
  double hota = 0, deta = 0, assa = 0, loca = 0;
  double detre = 0, detpr = 0, assre = 0, asspr = 0;
};

class HotaAccumulator {
 public:
  explicit HotaAccumulator(bool class_aware = false) : class_aware_(class_aware) {}
  // One frame: identities and boxes (box.class_id is compared when class_aware).
  void add_frame(const std::vector<int64_t>& truth_ids, const std::vector<Detection>& truth_boxes,
                 const std::vector<int64_t>& hyp_ids, const std::vector<Detection>& hyp_boxes);
  HotaMetrics summary() const;

 private:
  struct Frame {
    std::vector<int> truth, hyp;     // dense identity indices
    std::vector<double> similarity;  // truth x hyp IoU
  };
  // An identity's dense index, in order of first appearance.
  static int index_of(std::unordered_map<int64_t, int>& index, int64_t id);
  bool class_aware_;
  std::unordered_map<int64_t, int> truth_index_, hyp_index_;  // id -> dense index
  std::vector<Frame> frames_;
};

}  // namespace sd::eval
