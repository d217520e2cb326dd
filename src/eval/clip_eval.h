// Precision and recall of a whole clip from two JSONL files of streamdet's detection shape
// ({"frame": i, "detections": [{"box": [x1, y1, x2, y2], "class_id": c, "confidence": s,
// "ignore": b}]} per line): the ground truth written by the synthetic clip generator and the
// detections written by `streamdet run --detections`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "eval/match.h"

namespace sd::eval {

struct FrameRecord {
  int64_t frame = 0;
  double timestamp_ms = 0;            // "timestamp_ms" where the line has it, else 0
  std::vector<GroundTruthBox> boxes;  // for detections files, `ignore` is false and score is set
};

// Reads one record per non-empty line. Errors (kSource) name the file and line: unreadable
// file, bad JSON, missing "frame"/"detections", a box that is not 4 numbers, a repeated frame,
// an "object_id" or "track_id" that is not an integer.
Result<std::vector<FrameRecord>> read_frames_jsonl(const std::string& path);

struct ClipEvaluation {
  MatchCounts total;
  std::vector<MatchCounts> per_class;  // indexed by class id (as many as the largest id seen)
  int64_t frames = 0;                  // frames in the ground truth
  // Ground-truth frames with no line in the detections (their objects count as missed), and
  // detection lines for frames the ground truth does not have (their boxes count as false).
  int64_t frames_missing = 0, frames_unexpected = 0;
};

ClipEvaluation evaluate_frames(const std::vector<FrameRecord>& truth, const std::vector<FrameRecord>& detections,
                               const MatchOptions& options = {});

Result<ClipEvaluation> evaluate_clip(const std::string& truth_jsonl, const std::string& detections_jsonl,
                                     const MatchOptions& options = {});

}  // namespace sd::eval
