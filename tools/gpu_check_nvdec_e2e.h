// The GPU check's "nvdec_e2e" part (issue 22's target: with NVDEC and the GPU preprocess/NMS,
// end-to-end FPS at least 0.9 of the engine's on a 720p H.264 file): the pack's 1280x720 H.264
// clip (tools/nvdec_clip.h, made with --no-reference) decoded by NVDEC into the decoder's pool of
// device frames on a thread of its own (the pipeline's source thread), each frame letterboxed on
// the GPU straight into the session's device input (GpuFrameInput::put_nv12_device: no host copy),
// the model (fp16, CUDA graphs), its head decoded + NMS'd on the GPU and left there (only the kept
// boxes come back); frames per second over the clip, looped, against the engine alone at batch 1
// on the same session (its input already staged). Untimed first: every frame of one pass (as many
// as the budget allows, the first at least) also downloaded, letterboxed by the CPU reference
// (tests/gpu_frames_vectors.h) and run through the same session with the head decoded on the CPU:
// the same boxes. docs/gpu.md, "NVDEC", "The end-to-end check".
// Without a GPU (--backend cpu) there is no NVDEC: the clip and model are read, the part is
// recorded as skipped.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/native/backend.h"

namespace sd::gpu_check {

struct NvdecE2eOptions {
  std::string clip;   // folder of tools/nvdec_clip.h (no reference needed)
  std::string model;  // ONNX with a YOLOv8 head [1, 4 + classes, anchors], batch 1 or dynamic
  int channels = 3, height = 640, width = 640;
  double seconds = 4;          // timed end to end (the clip looped)
  double engine_seconds = 3;   // timed engine alone
  double budget_seconds = 15;  // the whole part: setup, the comparison, both timings
  float conf = 0.25f, iou = 0.45f;
  int device = 0;
  int threads = 1;
};

// check.json's "nvdec_e2e": "pass", "error", "fps", "engine_fps", "e2e_over_engine", "frames",
// "input" ("1280x720"), "precision", ... (docs/gpu.md). `gpu` nullptr: the CPU path (skipped).
nlohmann::json nvdec_e2e(const NvdecE2eOptions& options, const std::shared_ptr<const native::Backend>& gpu);

}  // namespace sd::gpu_check
