// The native engine's GpuDetectOutput on a CUDA device (engine/gpu_detect_output.h): the session's
// last run leaves the head in the device's memory (NativeSession::device_output; its host copy is
// still made), and the decode + NMS kernels (gpu_postprocess.h) read it there. An fp16 head
// (--precision fp16) is widened to float32 on the device first (one conversion kernel into a
// scratch of this object) rather than giving every decode kernel an fp16 read: the kernels and
// their CPU-reference tests stay as they are, at the cost of one small copy per image.
// It is also a GpuHeadOnDevice (engine/gpu_head_on_device.h): keep_on_device sets the output's bit in `*keep` (the context's: its runs pass it as
// NativeSession::RunOptions::outputs_on_device); host_output makes the skipped copy late
// (NativeSession::output_to_host).
#pragma once

#include <memory>
#include <string>

#include "engine/gpu_detect_output.h"
#include "engine/native/session.h"

namespace sd::native {

// nullptr in a build without CUDA (cuda_unavailable.cpp). `session` outlives the result; its
// device is CUDA device `cuda_index`, named `device_name` ("cuda:0"). `keep` (may be null: no
// output kept on the device) outlives the result.
std::unique_ptr<GpuDetectOutput> make_cuda_detect_output(NativeSession& session, int cuda_index, const std::string& device_name,
                                                         uint64_t* keep = nullptr);

}  // namespace sd::native
