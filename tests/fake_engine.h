// A test double for the engine interface: outputs a YOLOv8-shaped head [N, 5, 8] whose one
// confident box is a function of the input image's mean, so a test can tell which frame a
// detection came from. Optional random delay per call (to shuffle completion order across
// workers) and a failure at the K-th call (to test error paths).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "model/model_info.h"

namespace sd::test {

struct FakeEngineConfig {
  int max_delay_ms = 0;              // each call sleeps a pseudo-random 0..max_delay_ms
  int fixed_delay_ms = 0;            // plus this much
  int64_t fail_at_call = -1;         // the call (0-based, over all contexts) that fails; -1: never
  std::shared_ptr<std::atomic<int64_t>> calls = std::make_shared<std::atomic<int64_t>>(0);
  std::shared_ptr<std::atomic<int64_t>> max_batch_seen = std::make_shared<std::atomic<int64_t>>(0);
  // The engine says it runs on "cuda:0" and its contexts take frames as a GPU context does
  // (GpuFrameInput), letterboxed on the host by the GPU kernels' plain reference
  // (gpu_frames_vectors.h): the pipeline's --preprocess-on wiring without a GPU. gpu_frames_fail:
  // every put fails. frames_put counts the frames put.
  bool gpu_frames = false;
  bool gpu_frames_fail = false;
  std::shared_ptr<std::atomic<int64_t>> frames_put = std::make_shared<std::atomic<int64_t>>(0);
  // Of those, the frames put as NV12 in "device" memory (put_nv12_device; a test's fake device
  // frames lie in host memory), and the PTS of each, in the order put.
  std::shared_ptr<std::atomic<int64_t>> device_frames_put = std::make_shared<std::atomic<int64_t>>(0);
  // The engine says it runs on "cuda:0" and its contexts decode their last run's head as a GPU
  // context does (GpuDetectOutput), by the plain CPU decode + NMS (detection_parity.h): the
  // pipeline's --postprocess-on wiring without a GPU. gpu_detect_fail: every decode fails.
  // images_detected counts the images decoded that way.
  bool gpu_detect = false;
  bool gpu_detect_fail = false;
  std::shared_ptr<std::atomic<int64_t>> images_detected = std::make_shared<std::atomic<int64_t>>(0);
  // The decodes from this one on (0-based, over all contexts) fail; -1: none.
  int64_t gpu_detect_fail_from = -1;
  std::shared_ptr<std::atomic<int64_t>> detect_calls = std::make_shared<std::atomic<int64_t>>(0);
  // Like the native engine's, the contexts keep the head "on the device" when asked
  // (GpuDetectOutput::keep_on_device): the host's head is then zeros (what a stale read would
  // find: no box), the decode and host_output read the real one. heads_kept counts those runs.
  std::shared_ptr<std::atomic<int64_t>> heads_kept = std::make_shared<std::atomic<int64_t>>(0);
};

// Registers engine `name` (replacing an earlier one) with this behaviour.
void register_fake_engine(const std::string& name, const FakeEngineConfig& config);

// The box the fake engine puts on an input image whose plane-0 mean is `mean`, in network pixels.
void fake_box_for_mean(double mean, float& cx, float& cy, float& w, float& h);

// Writes a minimal valid ONNX file (declared input [?, 3, ?, ?]) for inspect_model to accept.
void write_minimal_onnx(const std::string& path);

}  // namespace sd::test
