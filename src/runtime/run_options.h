// Everything `streamdet run` was asked to do, as one explicit struct handed down (no globals).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "postprocess/layout.h"

namespace sd {

struct ModelOptions {
  std::string model;           // .onnx or Darknet .cfg
  std::string weights;         // Darknet .weights (default: beside the .cfg)
  std::string engine = "opencv";
  int threads = 0;             // inference threads (0: engine default)
  std::string input_size = "auto";  // auto | W,H | N
  Layout layout = Layout::kAuto;
  std::string preprocess;      // overrides, see preprocess_spec.h
  std::string classes_file;    // one class name per line
  float conf = 0.25f;
  float iou = 0.45f;
  bool agnostic = false;
  int max_det = 300;
};

struct RunOptions {
  ModelOptions model;
  std::vector<std::string> sources;
  std::string output;          // annotated video
  std::string detections;      // JSONL
  std::string profile_json;
  int64_t max_frames = -1;     // per source; -1: all
  bool quiet = false;
};

}  // namespace sd
