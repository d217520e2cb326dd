// The native ONNX engine behind the sd::Engine interface ("--engine native"): one loaded model
// (weights shared by every context), one NativeSession per inference worker.
#pragma once

#include <memory>

#include "engine/engine.h"
#include "model/model_info.h"

namespace sd {

Result<std::unique_ptr<Engine>> load_native_engine(const ModelInfo& model);

}  // namespace sd
