// --preprocess-on auto|cpu|gpu: where frames are letterboxed into the network input. gpu: on the
// inference context's CUDA device (engine/gpu_frame_input.h), the frame uploaded as it is; cpu:
// preprocess_frame on the preprocess threads, the reference. auto: the GPU where the context can,
// else the CPU.
#pragma once

#include <string>

#include "core/error.h"
#include "engine/gpu_frame_input.h"
#include "sources/source.h"

namespace sd {

struct PreprocessPlace {
  bool gpu = false;
  std::string where;  // "cpu", or the context's GpuFrameInput::where()
};

// `option`: auto|cpu|gpu. `engine_device`: EngineCapabilities::device ("cpu", "cuda:0").
// `frames`: the first worker's context's capability (nullptr: none). gpu where it cannot be: one
// line, kModel (exit 3) when the model does not run on a CUDA device (as `--device cuda` without
// one), kUnsupported (exit 6) when it does but the engine cannot take frames there.
Result<PreprocessPlace> choose_preprocess_place(const std::string& option, const std::string& engine_device,
                                                const std::string& engine_name, GpuFrameInput* frames);

// Where a source's NVDEC frames go once the preprocess place is chosen: with the GPU letterbox on
// the device NVDEC decodes on, the source hands them over in device memory (no host copy);
// otherwise they are downloaded as before. Returns the profile's line ("nvdec -> gpu preprocess
// (no host copy)", or "nvdec -> downloaded to the host: <why>"), "" for a source NVDEC does not
// decode. `engine_device`: "cuda:0", "cpu".
std::string nvdec_frame_path(const PreprocessPlace& place, const std::string& engine_device, const SourceInfo& info, Source& source);

}  // namespace sd
