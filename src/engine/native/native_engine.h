// The native ONNX engine behind the sd::Engine interface ("--engine native"): one loaded model
// (weights shared by every context), one NativeSession per inference worker.
#pragma once

#include <memory>

#include "engine/engine.h"
#include "model/model_info.h"

namespace sd {

// options.device: auto runs on CUDA device 0 when it is usable (built with CUDA, a driver and a
// GPU), else on the CPU; cpu; cuda or cuda:N, an error (exit 3) naming why when it is not usable.
Result<std::unique_ptr<Engine>> load_native_engine(const ModelInfo& model, const EngineOptions& options = {});

}  // namespace sd
