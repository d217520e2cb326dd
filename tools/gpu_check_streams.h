// The GPU check's "streams" part (issue 22, item 6: many streams on one GPU): N synthetic 1080p
// streams end to end in one process, M worker threads each with its own session (its own CUDA
// stream; fp16 on a GPU), per frame: the host letterbox written straight into the session's
// page-locked input staging, the engine (upload, model, download), the YOLOv8 head decoded and
// suppressed on the CPU, the kept boxes; on a GPU each count again with the frame's way on the
// GPU (the kernel's letterbox of the uploaded frame, decode + NMS on the device: `run
// --preprocess-on gpu --postprocess-on gpu`), checked first against the host way's boxes.
// Against the engine alone (the same M sessions, the input
// already staged), so that "e2e_over_engine" says what the frame's way around the engine costs;
// with the GPU's busy share from NVML over the row ("gpu_busy", null without NVML).
// Plain C++ on the native engine: no OpenCV or FFmpeg (the GPU machine has neither).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/native/backend.h"

namespace sd::gpu_check {

struct StreamsOptions {
  std::string model;                  // ONNX with a YOLOv8 head [1, 4 + classes, anchors]
  int channels = 3, height = 640, width = 640;  // its input image
  std::vector<int> streams{8, 32};    // one row per count
  int workers = 8;                    // M sessions, each on its own thread
  int frame_width = 1920, frame_height = 1080;
  int distinct_frames = 4;            // made once on the host; stream s shows them in turn
  double stream_fps = 30;             // what "realtime" holds each stream's rate against
  double row_seconds = 3;             // timed part of each row (and of the engine-only run)
  double budget_seconds = 20;         // the whole part: rows that no longer fit are recorded as skipped
  float conf = 0.25f, iou = 0.45f;
  int threads = 1;                    // CPU threads of each session
  int device = 0;                     // NVML's GPU for "gpu_busy"
};

// Runs the rows in order, each handed to `row` when measured or skipped; returns how many failed.
// `gpu` nullptr: the CPU alone (the test suite's tiny sizes).
int run_streams(const StreamsOptions& options, const std::shared_ptr<const native::Backend>& gpu,
                const std::function<void(const nlohmann::json&)>& row);

}  // namespace sd::gpu_check
