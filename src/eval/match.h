// Detection quality against ground truth, the way detection benchmarks count it: detections are
// matched greedily in descending score order to the unmatched ground-truth box of the same class
// with the highest IoU, if that IoU >= the threshold. Ground truth marked `ignore` (mostly hidden,
// tiny) is neither rewarded nor penalised: a detection matching it is not a false positive, and
// missing it is not a false negative.
#pragma once

#include <cstdint>
#include <span>

#include "core/detection.h"

namespace sd::eval {

struct GroundTruthBox {
  Detection box;  // class_id and coordinates; score unused
  bool ignore = false;
  // Identities where a file gives them (eval/mot_clip_eval): "object_id" of the ground truth,
  // "track_id" of a tracked detection; -1 where absent. Detection matching does not use them.
  int64_t object_id = -1, track_id = -1;
};

struct MatchOptions {
  float iou_threshold = 0.5f;
  bool class_aware = true;  // false: any class matches any class
};

struct MatchCounts {
  int64_t true_positives = 0;
  int64_t false_positives = 0;
  int64_t false_negatives = 0;
  int64_t ignored_detections = 0;  // matched only an ignored box: counted neither way

  // TP / (TP + FP); 1 when nothing was detected.
  double precision() const;
  // TP / (TP + FN); 1 when there was nothing to find.
  double recall() const;
  MatchCounts& operator+=(const MatchCounts& o);
};

// Matches the detections of one frame against its ground truth.
MatchCounts match_frame(std::span<const Detection> detections, std::span<const GroundTruthBox> truth,
                        const MatchOptions& options = {});

}  // namespace sd::eval
