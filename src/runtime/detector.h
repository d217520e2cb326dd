// A loaded detector: the model, its engine, the decoder picked for its outputs, the class
// names, the network input size and the preprocessing spec. Built once per run, shared by the
// pipeline and `streamdet bench`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <opencv2/core/types.hpp>

#include "core/error.h"
#include "engine/engine.h"
#include "model/model_info.h"
#include "postprocess/decoder.h"
#include "postprocess/nms.h"
#include "preprocess/preprocess_spec.h"
#include "runtime/run_options.h"

namespace sd {

struct Detector {
  ModelInfo model;
  std::unique_ptr<Engine> engine;
  std::shared_ptr<const Decoder> decoder;  // immutable, shared by every worker's Postprocessor
  std::vector<std::string> class_names;
  cv::Size input_size;
  PreprocessSpec preprocess;
  DecodeOptions decode;
  NmsOptions nms;
  std::unique_ptr<InferenceContext> first_context;  // used by the probe; hand it to the first worker
};

// The engine --engine names, with auto resolved: native for ONNX, opencv for Darknet (.cfg).
std::string resolved_engine_name(const ModelOptions& options);

// --max-memory, or the default budget (core/memory_budget.h).
uint64_t memory_budget(const ModelOptions& options);
// The bytes of an NCHW float input of `batch` images.
uint64_t input_tensor_bytes(cv::Size input_size, int batch);

// What each worker's context is created with (threads, --engine-profile, the memory budget).
ContextOptions context_options(const ModelOptions& options);

// Loads the model and engine, resolves the input size for frames of `frame_size` (0x0 when
// unknown), probes the engine once to see the concrete output shapes, and picks the decoder.
Result<Detector> load_detector(const ModelOptions& options, cv::Size frame_size);

// Resolves --input-size against the model: auto | W,H | N. Errors are kUsage or kModel.
Result<cv::Size> resolve_input_size(const std::string& spec, const Engine& engine, const ModelInfo& model,
                                    cv::Size frame_size);

Result<std::vector<std::string>> read_class_names(const std::string& path);

}  // namespace sd
