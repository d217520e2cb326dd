// The native engine's GpuFrameInput on a CUDA device (engine/gpu_frame_input.h): each frame is
// uploaded as it is (uint8 BGR, or I420 interleaved to NV12 on the way) and the letterbox kernel
// (gpu_preprocess.h) writes the float32 NCHW input straight into the session's page-locked input
// staging (NativeSession::input_staging, device-accessible under unified addressing); the
// session's run then uploads it from there (converting to fp16 where the plan stores fp16).
// Why the staging and not the device input tensor: the planner owns where a graph input lives on
// the device (and records it into the CUDA graph); binding a caller's device pointer there is a
// planner change left for later (docs/gpu.md, "Frames on the GPU").
#pragma once

#include <memory>

#include "engine/gpu_frame_input.h"
#include "engine/native/session.h"

namespace sd::native {

// nullptr in a build without CUDA (cuda_unavailable.cpp). `session` outlives the result; the
// session's device is CUDA device `cuda_index`, named `device_name` ("cuda:0").
std::unique_ptr<GpuFrameInput> make_cuda_frame_input(NativeSession& session, int cuda_index, const std::string& device_name);

}  // namespace sd::native
