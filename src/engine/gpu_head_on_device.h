// An optional capability of a GpuDetectOutput (engine/gpu_detect_output.h): the context can leave
// the detection head on the device after each run, its copy to the host skipped, since the decode
// reads it there anyway (docs/gpu.md, "Frames on the GPU"). The native engine's CUDA contexts
// have it (NativeSession::RunOptions::outputs_on_device); the pipeline asks for it with a
// dynamic_cast after a worker's first batch decoded on the GPU. Its own header so that adding it
// leaves engine.h, which every file includes, as it is.
#pragma once

#include "core/error.h"
#include "core/tensor.h"

namespace sd {

class GpuHeadOnDevice {
 public:
  virtual ~GpuHeadOnDevice() = default;
  // on: the context's next runs leave output `output` on the device and skip its copy to the host
  // (GpuDetectOutput::detect reads it there): the caller's outputs[output] after a run are then
  // stale, and must not be read. off: copied again. False where the context cannot (it copies as before).
  virtual bool keep_on_device(int output, bool on) = 0;
  // Output `output` of the last run on the host after all, into `out`: for a detect() that
  // failed while the output was kept on the device (the CPU decodes it instead).
  virtual Status host_output(int output, Tensor& out) = 0;
};

}  // namespace sd
