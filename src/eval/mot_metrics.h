// Multi-object tracking metrics, computed the way py-motmetrics computes them (the MOTChallenge
// devkit's definitions), so that figures are comparable with what trackers publish:
//
// - CLEAR MOT (Bernardin & Stiefelhagen 2008): per frame, a ground-truth object keeps last
//   frame's hypothesis if they still overlap (IoU >= the threshold); the others are matched by
//   the Hungarian algorithm (most matches, then the least distance 1 - IoU). A ground-truth object
//   matched to another hypothesis than the one it had last is an identity switch. MOTA =
//   1 - (misses + false positives + switches) / ground-truth boxes; MOTP the mean distance of the
//   matches. A fragmentation is a tracked object missed, counted between its first and last match.
//   Mostly tracked / mostly lost: matched in >= 80% / < 20% of the frames it is present in.
// - Identity measures (Ristani et al. 2016): one global one-to-one pairing of ground-truth and
//   hypothesis identities maximising the frames they overlap (IDTP); IDF1 = 2 IDTP / (ground-truth
//   boxes + hypothesis boxes), IDP = IDTP / hypothesis boxes, IDR = IDTP / ground-truth boxes.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "core/detection.h"
#include "eval/hota.h"

namespace sd::eval {

struct MotObject {
  int64_t id = 0;
  Detection box;
};

// One identity switch: in the accumulator's frame `frame` (0-based, the order frames were added),
// ground-truth object `truth_id`, matched to hypothesis `from` when last matched, is matched to `to`.
struct MotSwitch {
  int64_t frame = 0, truth_id = 0, from = 0, to = 0;
};

struct MotMetrics {
  int64_t frames = 0;
  int64_t truth_boxes = 0, hypothesis_boxes = 0;
  int64_t matches = 0, misses = 0, false_positives = 0, id_switches = 0, fragmentations = 0;
  int64_t truth_tracks = 0, mostly_tracked = 0, partially_tracked = 0, mostly_lost = 0;
  double mota = 0, motp = 0;  // motp: mean 1 - IoU of the matches (py-motmetrics' convention)
  int64_t idtp = 0, idfp = 0, idfn = 0;
  double idf1 = 0, idp = 0, idr = 0;
  HotaMetrics hota;  // eval/hota.h
  std::vector<MotSwitch> switches;  // each of the id_switches, in frame order
};

class MotAccumulator {
 public:
  // class_aware: a hypothesis overlaps only ground truth of its own class (box.class_id), as
  // TrackEval scores multi-class data class by class; false: any class (py-motmetrics).
  explicit MotAccumulator(double iou_threshold = 0.5, bool class_aware = false)
      : iou_threshold_(iou_threshold), class_aware_(class_aware), hota_(class_aware) {}

  // One frame, in order: its ground truth and the tracker's output (ids unique within a frame).
  void add_frame(std::span<const MotObject> truth, std::span<const MotObject> hypotheses);
  MotMetrics summary() const;

 private:
  struct TruthHistory {
    std::vector<char> matched;  // per frame it is present in: 1 matched, 0 missed
  };
  double iou_threshold_;
  bool class_aware_;
  MotMetrics counts_;
  double distance_sum_ = 0;
  std::map<int64_t, int64_t> last_match_;                  // truth id -> the hypothesis it last had
  std::map<int64_t, TruthHistory> truth_history_;          // truth id -> matched or not, frame by frame
  std::map<std::pair<int64_t, int64_t>, int64_t> overlap_;  // (truth id, hypothesis id) -> frames with IoU >= threshold
  std::map<int64_t, int64_t> truth_count_, hypothesis_count_;
  HotaAccumulator hota_;
};

}  // namespace sd::eval
