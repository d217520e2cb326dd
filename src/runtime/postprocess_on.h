// --postprocess-on auto|cpu|gpu: where the detection head is decoded and NMS'd. gpu: on the
// inference context's CUDA device, reading the head where the run left it, only the kept boxes
// copied back (engine/gpu_detect_output.h); cpu: the Postprocessor on the host copy, the
// reference. auto: the GPU where the context can and the head is one the GPU decodes (YOLOv8,
// YOLOv5, YOLOX), else the CPU. Either way the boxes are mapped back to the frame on the host.
#pragma once

#include <optional>
#include <string>

#include "core/error.h"
#include "engine/gpu_detect_output.h"
#include "postprocess/decoder.h"

namespace sd {

struct PostprocessPlace {
  bool gpu = false;
  std::string where = "cpu";  // "cpu", or the context's GpuDetectOutput::where()
  GpuDetectHead head;         // gpu: the head as the kernels take it
  std::string why_cpu;        // auto on a GPU context that stays on the CPU: why (said once)
};

// The decoder's head as the GPU kernels take it; nullopt for a head they do not decode.
// `decode`: its input size overrides a YOLOX head's own (as the CPU decoder).
std::optional<GpuDetectHead> gpu_head_of(const Decoder& decoder, const DecodeOptions& decode);

// `option`: auto|cpu|gpu. `engine_device`: EngineCapabilities::device. `detect`: the first
// worker's context's capability (nullptr: none). gpu where it cannot be: one line, kModel (exit 3)
// when the model does not run on a CUDA device, kUnsupported (exit 6) when the engine cannot
// decode there or the head is not one the GPU decodes.
Result<PostprocessPlace> choose_postprocess_place(const std::string& option, const std::string& engine_device,
                                                  const std::string& engine_name, GpuDetectOutput* detect,
                                                  const Decoder& decoder, const DecodeOptions& decode);

}  // namespace sd
