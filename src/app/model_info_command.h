// `streamdet model-info`: what the native engine makes of an ONNX model: its inputs and outputs,
// and the plan at an input size: which backend runs each node, the copies between backends per
// run, and each backend's memory. Darknet models (OpenCV DNN) get their inputs and outputs only.
#pragma once

#include <string>

#include <CLI/App.hpp>

#include "core/error.h"

namespace sd {

struct ModelInfoOptions {
  std::string model;
  std::string input_size = "auto";  // auto | W,H | N
  int batch = 1;
  int threads = 1;
  std::string device = "auto";  // as run's --device
  std::string precision = "auto";  // as run's --precision
  bool cuda_graphs = true;  // as run's --cuda-graphs
  bool steps = false;  // list every step of the plan
};

void add_model_info_options(CLI::App& cmd, ModelInfoOptions& options);
Status run_model_info(const ModelInfoOptions& options);

}  // namespace sd
