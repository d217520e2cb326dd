// An inference context's capability to take frames as they are and letterbox them on its GPU
// into its own input (docs/gpu.md, "Frames on the GPU"): the pipeline's `--preprocess-on gpu`.
// InferenceContext::gpu_frame_input() hands it out where the context runs on a CUDA device
// (native engine); elsewhere it is nullptr and the CPU letterboxes (runtime/preprocess_on.h).
// Plain C++ (the placement types of the kernels' launcher header), no CUDA or OpenCV.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device_frame.h"
#include "core/error.h"
#include "core/tensor.h"
#include "engine/native/cuda/frame_kernels.h"

namespace sd {

using GpuInputPlacement = native::cuda::InputPlacement;

class GpuFrameInput {
 public:
  virtual ~GpuFrameInput() = default;
  // Image `slot` of the next run's input of `batch` images (NCHW, placement.dst_* its size),
  // from 8-bit BGR pixels in host memory (`pitch` bytes per row). Uploaded and letterboxed on
  // the GPU; every slot of the batch must be put before infer_put().
  virtual Status put_bgr(int slot, int batch, const uint8_t* bgr, int width, int height, int64_t pitch,
                         const GpuInputPlacement& placement) = 0;
  // The same from I420 in host memory (Y, then U, then V; even sizes): the chroma planes are
  // interleaved into NV12 on the way and the NV12 kernel converts.
  virtual Status put_i420(int slot, int batch, const uint8_t* i420, int width, int height,
                          const GpuInputPlacement& placement) = 0;
  // The same from NV12 already in the device's memory (a frame NVDEC decoded there: no copy). The
  // frame must be complete (the decoder waits for its copy-out before it hands a frame out), on
  // this context's device, and stay alive until infer_put() returns (the kernel reads it until then).
  virtual Status put_nv12_device(int slot, int batch, const DeviceNv12& frame, const GpuInputPlacement& placement) = 0;
  // Runs the model on the images put since the last run; outputs as InferenceContext::infer.
  virtual Status infer_put(std::vector<Tensor>& outputs) = 0;
  // Where the letterbox writes, for the log and the profile: "cuda:0, into the input's page-locked staging".
  virtual std::string where() const = 0;
};

}  // namespace sd
