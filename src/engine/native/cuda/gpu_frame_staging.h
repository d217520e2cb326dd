// The native engine's GpuFrameInput on a CUDA device (engine/gpu_frame_input.h): each frame is
// uploaded as it is (uint8 BGR, or I420 interleaved to NV12 on the way) and the letterbox kernel
// (gpu_preprocess.h) writes the network input where the plan's first device step reads it
// (NativeSession::device_input: float32 or, with --precision fp16, float16 NCHW), on the session's
// stream; the run then skips its upload (RunOptions::inputs_on_device). Where the session cannot
// bind the input (its first reader is a CPU step, no device), the kernel writes float32 NCHW into
// the session's page-locked input staging (NativeSession::input_staging, device-accessible under
// unified addressing) and the run uploads it from there: said once (docs/gpu.md, "Frames on the GPU").
#pragma once

#include <memory>

#include "engine/gpu_frame_input.h"
#include "engine/native/session.h"

namespace sd::native {

// nullptr in a build without CUDA (cuda_unavailable.cpp). `session` outlives the result; the
// session's device is CUDA device `cuda_index`, named `device_name` ("cuda:0"). `keep` (may be
// null): the outputs its runs leave on the device (NativeSession::RunOptions::outputs_on_device),
// set by the context's GpuDetectOutput; those outputs of infer_put are left stale.
std::unique_ptr<GpuFrameInput> make_cuda_frame_input(NativeSession& session, int cuda_index, const std::string& device_name,
                                                     const uint64_t* keep = nullptr);

}  // namespace sd::native
