// `streamdet quantize`: static int8 quantization of an fp32 ONNX detector by streamdet's own
// engine. Activation ranges are collected over calibration frames (a folder of images or a video)
// preprocessed as the detector preprocesses them; the model is written in ONNX Runtime's QDQ form
// (quantize/qdq_rewrite.h), which streamdet folds into oneDNN int8 convolutions and ONNX Runtime
// also runs. The head's last convolutions stay float (the rule: quantize/qdq_rewrite.cpp), and so
// do the nodes a per-layer sensitivity analysis finds cost the outputs most (quantize/sensitivity.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/App.hpp>

#include "core/error.h"
#include "runtime/run_options.h"

namespace sd {

struct QuantizeOptions {
  ModelOptions model;                  // model, threads, input size, preprocess, layout
  std::string calib;                   // a folder of images, an image, a glob or a video file
  std::string out;                     // the QDQ model to write
  int64_t calib_frames = 100;          // the first N frames (fewer if the source has fewer)
  std::vector<std::string> keep_float;  // node names kept float besides the rule's
  std::string method = "minmax";       // minmax | percentile
  int keep_float_auto = 8;             // sensitivity analysis: at most N more nodes kept float (0: off)
  double sensitivity_target = 1e-3;    // ... until the outputs' relative squared error is under this
  int64_t sensitivity_frames = 8;      // ... measured on the first N calibration frames
  bool reduce_range = false;           // weights in 7 bits: int8 convolutions exact without VNNI
  std::string head = "int8-input";    // the head's last convolutions: int8-input (float output) | float
  bool quiet = false;
};

void add_quantize_options(CLI::App& cmd, QuantizeOptions& options, std::string& layout);
Status run_quantize(const QuantizeOptions& options);

}  // namespace sd
