// What we know about a model before running it: its format, files, class names and the
// hints its exporter left (Ultralytics ONNX metadata: names, stride, imgsz; a Darknet cfg).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace sd {

enum class ModelFormat { kOnnx, kDarknet };

// One Darknet [yolo] layer: raw output [N, na*(5+nc), H, W], decoded with these anchors.
struct DarknetYoloLayer {
  std::vector<float> anchors;  // masked anchors as w0,h0,w1,h1,... in network-input pixels
  int classes = 0;
  float scale_x_y = 1.f;       // YOLOv4 grid sensitivity
  bool new_coords = false;     // scaled-YOLOv4 style (no exp/sigmoid on the raw outputs)
};

struct DarknetConfig {
  int width = 0, height = 0, channels = 3;
  bool letter_box = false;
  std::vector<DarknetYoloLayer> yolo_layers;  // in cfg order
  // Floats the layers read from .weights (convolution weights, biases and batch-norm terms);
  // nullopt when a layer of a kind whose count we do not know appears.
  std::optional<int64_t> weight_count;
};

// Checks a .weights file's size against the cfg: its header (3 x int32, then `seen` as int64
// from version 0.2 on, int32 before) and 4 bytes per parameter. A truncated file, or one made for
// another cfg, loads into junk detections: refused here, naming both sizes.
Status check_darknet_weights(const std::string& weights_path, const std::string& cfg_path, const DarknetConfig& cfg);

// Parses the sections of a Darknet .cfg that matter for inference input and decoding.
Result<DarknetConfig> parse_darknet_cfg(const std::string& cfg_path);

struct ModelInfo {
  ModelFormat format = ModelFormat::kOnnx;
  std::string model_path;    // .onnx or .cfg
  std::string weights_path;  // Darknet .weights (empty for ONNX)
  std::map<std::string, std::string> metadata;  // ONNX metadata_props
  std::vector<std::string> class_names;         // from metadata "names" (empty if absent)
  std::vector<int> strides;                     // from metadata "stride" (empty if absent)
  int imgsz_w = 0, imgsz_h = 0;                 // from metadata "imgsz" (0 if absent)
  std::optional<DarknetConfig> darknet;
  std::vector<TensorInfo> declared_inputs;   // ONNX graph inputs (initializers excluded), -1 dynamic
  std::vector<TensorInfo> declared_outputs;  // ONNX graph outputs
  int max_stride() const;  // the largest known stride, 32 when unknown
};

// Whether a --model path names a Darknet model (its .cfg, any letter case) rather than ONNX.
bool is_darknet_model_path(const std::string& model_path);

// Reads the model's metadata (and the Darknet cfg). `weights` overrides the .weights path that is
// otherwise found beside the .cfg. Errors name the file and the problem (kModel).
Result<ModelInfo> inspect_model(const std::string& model_path, const std::string& weights = "");

// Parses the Ultralytics "names" metadata value: "{0: 'person', 1: 'bicycle'}" (or a list).
std::vector<std::string> parse_names_metadata(const std::string& value);

}  // namespace sd
