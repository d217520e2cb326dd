// Frames into the network input on the GPU (frame_kernels.h underneath), errors naming the launch.
// Not yet called by the pipeline (docs/gpu.md, "Frames on the GPU").
#pragma once

#include <cuda_runtime_api.h>

#include "core/error.h"
#include "engine/native/cuda/frame_kernels.h"

namespace sd::native::cuda {

// One image of the input at `dst` (device memory, layout's element type). Asynchronous on `stream`.
Status letterbox_bgr_gpu(const BgrImage& src, const InputPlacement& placement, InputLayout layout, void* dst,
                         cudaStream_t stream);
Status letterbox_nv12_gpu(const Nv12Image& src, const InputPlacement& placement, InputLayout layout, void* dst,
                          cudaStream_t stream);

}  // namespace sd::native::cuda
