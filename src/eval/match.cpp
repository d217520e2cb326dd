#include "eval/match.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace sd::eval {

double MatchCounts::precision() const {
  const int64_t n = true_positives + false_positives;
  return n == 0 ? 1.0 : static_cast<double>(true_positives) / static_cast<double>(n);
}

double MatchCounts::recall() const {
  const int64_t n = true_positives + false_negatives;
  return n == 0 ? 1.0 : static_cast<double>(true_positives) / static_cast<double>(n);
}

MatchCounts& MatchCounts::operator+=(const MatchCounts& o) {
  true_positives += o.true_positives;
  false_positives += o.false_positives;
  false_negatives += o.false_negatives;
  ignored_detections += o.ignored_detections;
  return *this;
}

MatchCounts match_frame(std::span<const Detection> detections, std::span<const GroundTruthBox> truth,
                        const MatchOptions& options) {
  std::vector<size_t> order(detections.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Stable, so equal scores keep their input order and the result is deterministic.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return detections[a].score > detections[b].score; });

  std::vector<bool> matched(truth.size(), false);
  MatchCounts counts;
  for (size_t d : order) {
    const Detection& det = detections[d];
    int best = -1;
    float best_iou = 0.f;
    bool hits_ignored = false;
    for (size_t g = 0; g < truth.size(); ++g) {
      if (options.class_aware && truth[g].box.class_id != det.class_id) continue;
      const float overlap = iou(det, truth[g].box);
      if (overlap < options.iou_threshold) continue;
      if (truth[g].ignore) {
        hits_ignored = true;  // may absorb any number of detections
      } else if (!matched[g] && (best < 0 || overlap > best_iou)) {
        best = static_cast<int>(g);
        best_iou = overlap;
      }
    }
    if (best >= 0) {
      matched[static_cast<size_t>(best)] = true;
      ++counts.true_positives;
    } else if (hits_ignored) {
      ++counts.ignored_detections;
    } else {
      ++counts.false_positives;
    }
  }
  for (size_t g = 0; g < truth.size(); ++g)
    if (!truth[g].ignore && !matched[g]) ++counts.false_negatives;
  return counts;
}

}  // namespace sd::eval
