#include "runtime/preprocess_on.h"

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

}  // namespace sd
