// Offline tracking for measurement (`streamdet_synth jitter` and `streamdet_synth track`): run
// sd::track::ByteTracker over a detections JSONL, and make detector-like detections from ground
// truth, so that the tracker can be scored with eval/mot_clip_eval without the pipeline.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "eval/clip_eval.h"
#include "track/appearance.h"
#include "track/byte_tracker.h"

namespace sd::eval {

struct JitterOptions {
  // Each edge of a box moves by a uniform amount in +-jitter x the box's width (x) or height (y).
  double jitter = 0.05;
  uint64_t seed = 1;
  // Detector-like scores: boxes the truth marks ignore (mostly hidden, tiny) get hidden_score,
  // the others visible_score; with ByteTrack's defaults the hidden ones go to its low-score round.
  float visible_score = 0.9f, hidden_score = 0.3f;
};

// The truth's boxes as detections (no "ignore", no ids), jittered; frames and timestamps kept.
// Deterministic for a seed on every machine (integer PRNG).
std::vector<FrameRecord> jitter_truth(const std::vector<FrameRecord>& truth, const JitterOptions& options);

// Runs a fresh tracker over the frames in timestamp order (ties: frame order) and sets each
// detection's track_id (-1 where the tracker gave none). frame_interval_ms <= 0: the median gap
// between consecutive timestamps (a file source's nominal interval), 1000 / 30 with < 2 frames.
// looks: empty (motion alone), or per frame (in `frames`' order) one descriptor per box, from
// describe_boxes. picture: the frames' size (the video's), {0, 0} unknown (ByteTracker::set_picture_size).
std::vector<FrameRecord> run_tracker(std::vector<FrameRecord> frames, const track::TrackerOptions& options,
                                     double frame_interval_ms = 0,
                                     const std::vector<std::vector<track::Appearance>>& looks = {},
                                     std::pair<int, int> picture = {0, 0});

// The size of a video's frames ({0, 0} when it cannot be read).
std::pair<int, int> video_size(const std::string& video_path);

// The appearance descriptors of every box, read from the video the detections were made on (a
// record's "frame" is the video's frame index, as `streamdet run --detections` and `clip` write
// it). Error (kSource): the video does not open, or ends before a record's frame.
Result<std::vector<std::vector<track::Appearance>>> describe_boxes(const std::vector<FrameRecord>& frames,
                                                                   const std::string& video_path);

// Writes frames as streamdet's detections JSONL ("frame", "timestamp_ms", "detections" with "box",
// "class_id", "confidence", and "track_id" where set). Error: kOutput.
Status write_frames_jsonl(const std::vector<FrameRecord>& frames, const std::string& path);

}  // namespace sd::eval
