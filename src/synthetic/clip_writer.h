// Writing synthetic scenes to disk: a clip (video + one ground-truth JSONL line per frame, in the
// shape of streamdet's detection output) for end-to-end tests, and a folder of independent random
// frames + labels for training the project's tiny detector (tools/train_tiny_detector.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core/types.hpp>

#include "core/error.h"
#include "synthetic/scene.h"

namespace sd::synth {

// The ground truth of one frame as a JSONL line (no trailing newline):
// {"source": ..., "frame": i, "timestamp_ms": t, "detections": [{"box": [x1, y1, x2, y2],
//  "class_id": c, "object_id": k, "class_name": ..., "confidence": 1.0, "ignore": false,
//  "visible": 0.93}, ...]}; object_id is the object's identity, the same in every frame.
std::string truth_jsonl_line(const std::string& source, int frame, double timestamp_ms,
                             const std::vector<TruthBox>& truth);

// Renders options.frames frames and writes them to `video_path` with OpenCV's VideoWriter
// (FFmpeg backend; ".mp4" -> mp4v, ".avi" -> MJPG) and their ground truth to `truth_jsonl_path`
// ("source" is video_path). With options.keep_every n > 1, only scene frames 0, n, 2n, ... below
// options.frames are written (see SceneOptions::keep_every). Errors: kUsage (bad options or
// extension), kOutput (cannot write).
Status write_synthetic_clip(const SceneOptions& options, const std::string& video_path,
                            const std::string& truth_jsonl_path);

struct FrameDumpOptions {
  int count = 1000;
  uint64_t seed = 1000;  // frame k is a scene of seed hash(seed, k): keep away from test seeds
  std::vector<cv::Size> sizes = {{320, 192}};  // each frame picks one of these at random
  int min_objects = 1, max_objects = 10;
  int max_frame_index = 300;  // each frame is a random time in [0, max_frame_index)
  // The same truth also as a COCO instances file, `out_dir`/instances.json (image ids 1, 2, ...;
  // category ids 1, 3, 5, 7: not the class indices, so that an evaluator must map them; ignored
  // objects as iscrowd regions, which COCO's metric neither rewards nor penalises).
  bool coco = false;
  // ... and in YOLO's form: `out_dir`/labels/NNNNNN.txt ("class cx cy w h" normalized; ignored
  // objects left out) and `out_dir`/data.yaml (names:).
  bool yolo = false;
};

// Writes `out_dir`/images/NNNNNN.png and `out_dir`/labels.jsonl, one line per image:
// {"image": "images/000012.png", "width": w, "height": h, "detections": [...as above...]}.
// `out_dir` is created if missing.
Status write_training_frames(const FrameDumpOptions& options, const std::string& out_dir);

}  // namespace sd::synth
