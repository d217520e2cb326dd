// Tracking quality of a whole clip (MOT metrics, eval/mot_metrics) from two JSONL files of
// streamdet's detection shape: the ground truth of `streamdet_synth clip` (each box with its
// "object_id") and the output of a tracker (`streamdet run --track ... --detections`, or
// `streamdet_synth track`: detections with "track_id"). Frames are paired by their "frame" index.
//
// - Hypotheses: the tracked file's detections that carry a "track_id"; the others (left
//   untracked by the tracker) are not counted at all.
// - Ignored ground truth (mostly hidden or tiny, "ignore": true) as the detection evaluation and
//   the MOTChallenge devkit treat it: per frame, hypotheses are first paired one-to-one with all
//   truth boxes, ignored ones included (most pairs with IoU >= the threshold, then the highest IoU);
//   a hypothesis paired with an ignored box is removed (neither a match nor a false positive), and
//   the ignored boxes are removed (never a miss). The rest goes to MotAccumulator.
// - Class-aware by default, as TrackEval scores multi-class data: a hypothesis matches only truth of
//   its class (streamdet's tracker is class-aware too). Class-agnostic (py-motmetrics on one
//   MOTChallenge sequence) on request: there, of two overlapping objects of different classes, the
//   one behind (a partial box) often pairs better with the other's hypothesis, and the swap of
//   the pairing from frame to frame counts as identity switches the tracker never made.
// - A truth frame with no tracked line has no hypotheses (its objects are missed); a tracked line
//   for a frame the truth lacks is a frame with no truth (its hypotheses are false positives).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "eval/clip_eval.h"
#include "eval/mot_metrics.h"

namespace sd::eval {

struct MotClipOptions {
  double iou_threshold = 0.5;
  bool class_aware = true;
};

struct MotClipEvaluation {
  MotMetrics metrics;
  int64_t frames_missing = 0, frames_unexpected = 0;  // as in ClipEvaluation
  int64_t untracked_detections = 0;                   // detections without "track_id", not counted
  int64_t ignored_hypotheses = 0;                     // hypotheses on ignored truth, not counted
  int64_t ignored_truth = 0;                          // ignored truth boxes, not counted
};

// Errors (kSource): a non-ignored truth box without "object_id", or two boxes of one frame with
// the same object_id or track_id.
Result<MotClipEvaluation> evaluate_tracking(const std::vector<FrameRecord>& truth,
                                            const std::vector<FrameRecord>& tracked, const MotClipOptions& options = {});

Result<MotClipEvaluation> evaluate_tracking_clip(const std::string& truth_jsonl, const std::string& tracked_jsonl,
                                                 const MotClipOptions& options = {});

// The evaluation as one JSON object (no trailing newline): every field of MotMetrics and the
// counts above, plus "ids_per_20_tracks" (ID switches per 20 ground-truth tracks).
std::string mot_json(const MotClipEvaluation& evaluation, const MotClipOptions& options);

// The identity switches, one JSON object a line ("frame" the files' frame index, "object_id",
// "from_track", "to_track"): what tools/classify_switches.py reads.
std::string mot_switches_jsonl(const MotClipEvaluation& evaluation);

}  // namespace sd::eval
