#include "runtime/detector.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "core/human_bytes.h"
#include "core/log.h"
#include "core/memory_budget.h"
#include "engine/engine_registry.h"
#include "postprocess/coco_names.h"

namespace sd {

Result<std::vector<std::string>> read_class_names(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(ErrorCode::kUsage, "cannot read class names from " + path);
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    names.push_back(line);
  }
  while (!names.empty() && names.back().empty()) names.pop_back();
  if (names.empty()) return fail(ErrorCode::kUsage, "class names file " + path + " is empty");
  return names;
}

namespace {

int round_up(int v, int m) { return (v + m - 1) / m * m; }

Result<cv::Size> parse_size(const std::string& spec) {
  auto bad = [&] {
    return fail(ErrorCode::kUsage, "--input-size '" + spec + "': expected auto, W,H or N (e.g. 640 or 1280,736)");
  };
  try {
    size_t comma = spec.find_first_of(",x");
    size_t used = 0;
    if (comma == std::string::npos) {
      int n = std::stoi(spec, &used);
      if (used != spec.size() || n <= 0) return bad();
      return cv::Size(n, n);
    }
    int w = std::stoi(spec.substr(0, comma), &used);
    if (used != comma) return bad();
    std::string hs = spec.substr(comma + 1);
    int h = std::stoi(hs, &used);
    if (used != hs.size() || w <= 0 || h <= 0) return bad();
    return cv::Size(w, h);
  } catch (...) {
    return bad();
  }
}

}  // namespace

Result<cv::Size> resolve_input_size(const std::string& spec, const Engine& engine, const ModelInfo& model,
                                    cv::Size frame_size) {
  const Shape& in = engine.inputs().at(0).shape;
  const bool fixed = !engine.capabilities().dynamic_input_size;
  const int stride = model.max_stride();
  cv::Size declared(in[3] > 0 ? static_cast<int>(in[3]) : model.imgsz_w, in[2] > 0 ? static_cast<int>(in[2]) : model.imgsz_h);
  if (model.format == ModelFormat::kDarknet) declared = cv::Size(model.darknet->width, model.darknet->height);
  if (spec == "auto") {
    // A fixed-size model (and a Darknet net, trained at its cfg size) runs at its own size;
    // a dynamic one at the frame size rounded up to the stride (1280x720 -> 1280x736).
    if (fixed || model.format == ModelFormat::kDarknet) {
      if (declared.width > 0 && declared.height > 0) return declared;
      return fail(ErrorCode::kModel, "model " + model.model_path + " declares no input size; pass --input-size");
    }
    if (frame_size.width > 0 && frame_size.height > 0)
      return cv::Size(round_up(frame_size.width, stride), round_up(frame_size.height, stride));
    if (declared.width > 0 && declared.height > 0) return declared;
    return cv::Size(640, 640);
  }
  SD_ASSIGN_OR_RETURN(cv::Size size, parse_size(spec));
  if (fixed && size != declared)
    return fail(ErrorCode::kUsage, "--input-size " + spec + ": model " + model.model_path + " has a fixed input of " +
                                       std::to_string(declared.width) + "x" + std::to_string(declared.height));
  if (!fixed && (size.width % stride != 0 || size.height % stride != 0))
    return fail(ErrorCode::kUsage, "--input-size " + spec + ": width and height must be multiples of the model stride " +
                                       std::to_string(stride));
  return size;
}

std::string resolved_engine_name(const ModelOptions& options) {
  if (options.engine != "auto") return options.engine;
  return is_darknet_model_path(options.model) ? "opencv" : "native";
}

uint64_t memory_budget(const ModelOptions& options) {
  return options.max_memory_bytes != 0 ? options.max_memory_bytes : default_memory_budget();
}

uint64_t input_tensor_bytes(cv::Size input_size, int batch) {
  return uint64_t{3} * sizeof(float) * static_cast<uint64_t>(input_size.width) * static_cast<uint64_t>(input_size.height) *
         static_cast<uint64_t>(batch);
}

ContextOptions context_options(const ModelOptions& options) {
  ContextOptions co;
  co.threads = options.threads;
  co.profile_rows = options.engine_profile_rows;
  co.memory_limit_bytes = memory_budget(options);
  return co;
}

Result<Detector> load_detector(const ModelOptions& options, cv::Size frame_size) {
  Detector det;
  const std::string engine_name = resolved_engine_name(options);
  if (options.engine_profile_rows >= 0 && engine_name != "native")
    return fail(ErrorCode::kUnsupported, "--engine-profile times the native engine's nodes; the " + engine_name + " engine has none");
  SD_ASSIGN_OR_RETURN(det.model, inspect_model(options.model, options.weights));
  EngineOptions engine_options;
  // auto means the CPU for an engine that only has one; a device asked for must be had.
  engine_options.device = options.device;
  engine_options.precision = options.precision;
  engine_options.cuda_graphs = options.cuda_graphs;
  SD_ASSIGN_OR_RETURN(det.engine, load_engine(engine_name, det.model, engine_options));
  for (const std::string& note : det.engine->capabilities().notes) log_info("model %s: %s", options.model.c_str(), note.c_str());
  SD_ASSIGN_OR_RETURN(det.input_size, resolve_input_size(options.input_size, *det.engine, det.model, frame_size));
  // The probe's input tensor alone, before allocating it (the engine checks its working set).
  const uint64_t input_bytes = input_tensor_bytes(det.input_size, 1);
  if (auto over = over_budget(input_bytes, memory_budget(options)))
    return fail(ErrorCode::kModel, "model " + options.model + " at " + std::to_string(det.input_size.width) + "x" +
                                       std::to_string(det.input_size.height) + " needs " + human_bytes(input_bytes) +
                                       " for one input tensor, " + *over);

  // Probe: one inference on a gray image at the chosen size gives the concrete output shapes
  // the decoder is picked from (and warms the engine up).
  SD_ASSIGN_OR_RETURN(det.first_context, det.engine->create_context(context_options(options)));
  Tensor probe(Shape{1, 3, det.input_size.height, det.input_size.width});
  std::fill_n(probe.data(), probe.numel(), 0.5f);
  std::vector<Tensor> outputs;
  if (auto st = det.first_context->infer(probe.view(), outputs); !st)
    return tl::unexpected(with_context(st.error(), "probing model " + options.model));
  std::vector<TensorInfo> concrete;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string name = i < det.engine->outputs().size() ? det.engine->outputs()[i].name : "output" + std::to_string(i);
    concrete.push_back(TensorInfo{name, outputs[i].shape()});
  }
  SD_ASSIGN_OR_RETURN(det.decoder, make_decoder(options.layout, concrete, det.model, det.input_size.width,
                                                det.input_size.height));

  const int nc = det.decoder->num_classes();
  if (!options.classes_file.empty()) {
    SD_ASSIGN_OR_RETURN(det.class_names, read_class_names(options.classes_file));
  } else if (!det.model.class_names.empty()) {
    det.class_names = det.model.class_names;
  } else if (nc == 80) {
    det.class_names = coco80_names();
  }
  if (!det.class_names.empty() && static_cast<int>(det.class_names.size()) != nc && nc > 0) {
    // Not fatal (a names file may carry extra lines), but a mismatch usually means the wrong file.
    log_warn("%zu class names for a model with %d classes", det.class_names.size(), nc);
  }

  bool letter_box = det.model.darknet && det.model.darknet->letter_box;
  det.preprocess = spec_for_layout(det.decoder->layout(), letter_box);
  if (!options.preprocess.empty()) SD_TRY(apply_preprocess_overrides(options.preprocess, det.preprocess));

  det.decode.conf_threshold = options.conf;
  det.decode.input_width = det.input_size.width;
  det.decode.input_height = det.input_size.height;
  det.nms.iou_threshold = options.iou;
  det.nms.agnostic = options.agnostic;
  det.nms.max_det = options.max_det;
  return det;
}

}  // namespace sd
