#include "runtime/preprocess_on.h"

#include <cstdlib>

namespace sd {

Result<PreprocessPlace> choose_preprocess_place(const std::string& option, const std::string& engine_device,
                                                const std::string& engine_name, GpuFrameInput* frames) {
  if (option != "auto" && option != "cpu" && option != "gpu")
    return fail(ErrorCode::kUsage, "--preprocess-on: expected auto, cpu or gpu, got '" + option + "'");
  PreprocessPlace cpu{false, "cpu"};
  if (option == "cpu") return cpu;
  const bool on_cuda = engine_device.rfind("cuda", 0) == 0;
  if (frames && on_cuda) return PreprocessPlace{true, frames->where()};
  if (option == "auto") return cpu;
  if (!on_cuda)
    return fail(ErrorCode::kModel, "--preprocess-on gpu: the model runs on " + engine_device +
                                       ", not a CUDA GPU (none is usable here, or --device chose the CPU)");
  return fail(ErrorCode::kUnsupported, "--preprocess-on gpu: the " + engine_name + " engine on " + engine_device +
                                           " cannot take frames on the GPU (the native engine can)");
}

std::string nvdec_frame_path(const PreprocessPlace& place, const std::string& engine_device, const SourceInfo& info, Source& source) {
  if (info.decoder.rfind("nvdec", 0) != 0) return "";
  const std::string host = "nvdec -> downloaded to the host: ";
  if (engine_device.rfind("cuda", 0) != 0) return host + "the model runs on " + engine_device;
  if (!place.gpu) return host + "the preprocess runs on the CPU";
  const size_t colon = engine_device.find(':');
  const int index = colon == std::string::npos ? 0 : std::atoi(engine_device.c_str() + colon + 1);
  std::string why_not;
  if (!source.keep_frames_on_device(index, why_not)) return host + why_not;
  return "nvdec -> gpu preprocess (no host copy)";
}

}  // namespace sd
