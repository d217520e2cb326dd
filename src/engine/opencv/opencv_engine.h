// OpenCV DNN backend: ONNX and Darknet models. For Darknet, the outputs are the raw
// convolutions feeding each [yolo] layer, so our own decoder (anchors from the cfg) handles them.
#pragma once

#include <memory>

#include "engine/engine.h"
#include "model/model_info.h"

namespace sd {

Result<std::unique_ptr<Engine>> load_opencv_engine(const ModelInfo& model);

}  // namespace sd
