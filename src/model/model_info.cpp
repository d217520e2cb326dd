#include "model/model_info.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <onnx/onnx_pb.h>

namespace sd {
namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::vector<int> parse_int_list(const std::string& value) {
  std::vector<int> out;
  std::string digits;
  for (char c : value + ",") {
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && !digits.empty())) {
      digits += c;
    } else if (!digits.empty()) {
      out.push_back(static_cast<int>(std::stod(digits)));
      digits.clear();
    }
  }
  return out;
}

// Reads only the parts of the ONNX file needed here; the protobuf parser reads the whole file.
Status read_onnx_metadata(const std::string& path, ModelInfo& info) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::kModel, "cannot open model " + path);
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in))
    return fail(ErrorCode::kModel, "model " + path + " is not a valid ONNX file (protobuf parse failed)");
  if (!model.has_graph() || model.graph().node_size() == 0)
    return fail(ErrorCode::kModel, "model " + path + " has an empty graph");
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  auto declared = [](const onnx::ValueInfoProto& v) {
    TensorInfo t;
    t.name = v.name();
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
      for (const auto& d : v.type().tensor_type().shape().dim())
        if (t.shape.rank < Shape::kMaxRank) t.shape.dims[static_cast<size_t>(t.shape.rank++)] = d.has_dim_value() ? d.dim_value() : -1;
    return t;
  };
  for (const auto& in : model.graph().input())
    if (!initializers.count(in.name())) info.declared_inputs.push_back(declared(in));
  for (const auto& out : model.graph().output()) info.declared_outputs.push_back(declared(out));
  for (const auto& prop : model.metadata_props()) info.metadata[prop.key()] = prop.value();
  if (auto it = info.metadata.find("names"); it != info.metadata.end())
    info.class_names = parse_names_metadata(it->second);
  if (auto it = info.metadata.find("stride"); it != info.metadata.end()) info.strides = parse_int_list(it->second);
  if (auto it = info.metadata.find("imgsz"); it != info.metadata.end()) {
    auto v = parse_int_list(it->second);
    if (v.size() == 1) info.imgsz_h = info.imgsz_w = v[0];
    if (v.size() >= 2) info.imgsz_h = v[0], info.imgsz_w = v[1];  // Ultralytics: [h, w]
  }
  return ok();
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<float> parse_float_list(const std::string& value) {
  std::vector<float> out;
  std::stringstream ss(value);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    if (!item.empty()) out.push_back(std::stof(item));
  }
  return out;
}

}  // namespace

int ModelInfo::max_stride() const {
  if (!strides.empty()) return *std::max_element(strides.begin(), strides.end());
  return 32;
}

std::vector<std::string> parse_names_metadata(const std::string& value) {
  // Accepts a Python dict repr {0: 'person', 1: "bicycle"} or a list ['person', 'bicycle'].
  std::vector<std::pair<int, std::string>> entries;
  bool is_dict = value.find(':') != std::string::npos;
  size_t i = 0;
  int next_index = 0;
  while (i < value.size()) {
    int key = next_index;
    if (is_dict) {
      size_t colon = value.find(':', i);
      if (colon == std::string::npos) break;
      auto keys = parse_int_list(value.substr(i, colon - i));
      if (keys.empty()) break;
      key = keys.back();
      i = colon + 1;
    }
    size_t q = value.find_first_of("'\"", i);
    if (q == std::string::npos) break;
    char quote = value[q];
    size_t end = q + 1;
    std::string name;
    while (end < value.size() && value[end] != quote) {
      if (value[end] == '\\' && end + 1 < value.size()) ++end;
      name += value[end++];
    }
    entries.emplace_back(key, name);
    next_index = key + 1;
    i = end + 1;
  }
  std::vector<std::string> names;
  for (auto& [k, n] : entries) {
    if (k < 0 || k > 100000) continue;
    if (static_cast<size_t>(k) >= names.size()) names.resize(static_cast<size_t>(k) + 1);
    names[static_cast<size_t>(k)] = n;
  }
  return names;
}

namespace {

struct CfgSection {
  std::string name;
  std::map<std::string, std::string> kv;
  int get(const char* key, int def) const {
    auto it = kv.find(key);
    return it == kv.end() ? def : std::stoi(it->second);
  }
};

// The parameters Darknet reads for each layer, following the channel count through the network
// (route concatenates or splits, reorg folds space into channels). Layers without weights pass
// their input's channels on; a layer of another kind makes the count unknown (nullopt).
Result<std::optional<int64_t>> count_darknet_weights(const std::vector<CfgSection>& sections, int input_channels,
                                                     const std::string& cfg_path) {
  std::vector<int64_t> channels;  // output channels of each layer (sections after [net])
  int64_t total = 0;
  for (size_t i = 1; i < sections.size(); ++i) {
    const CfgSection& s = sections[i];
    const int64_t in = channels.empty() ? input_channels : channels.back();
    const auto bad = [&](const std::string& why) {
      return fail(ErrorCode::kModel, "Darknet cfg " + cfg_path + ": [" + s.name + "] (layer " + std::to_string(i - 1) + ") " + why);
    };
    int64_t out = in;
    if (s.name == "convolutional" || s.name == "conv") {
      const int64_t filters = s.get("filters", 1), size = s.get("size", 1), groups = s.get("groups", 1);
      if (filters <= 0 || size <= 0 || groups <= 0 || in % groups != 0)
        return bad("has filters=" + std::to_string(filters) + ", size=" + std::to_string(size) + ", groups=" +
                   std::to_string(groups) + " for " + std::to_string(in) + " input channels");
      total += (s.get("batch_normalize", 0) ? 4 : 1) * filters + filters * (in / groups) * size * size;
      out = filters;
    } else if (s.name == "route") {
      auto it = s.kv.find("layers");
      if (it == s.kv.end()) return bad("has no layers=");
      out = 0;
      for (float f : parse_float_list(it->second)) {
        const auto ref = static_cast<int64_t>(f);
        const int64_t at = ref < 0 ? static_cast<int64_t>(channels.size()) + ref : ref;
        if (at < 0 || at >= static_cast<int64_t>(channels.size())) return bad("routes from layer " + std::to_string(ref) + ", which is not before it");
        out += channels[static_cast<size_t>(at)];
      }
      const int groups = s.get("groups", 1);
      if (groups <= 0) return bad("has groups=" + std::to_string(groups));
      out /= groups;
    } else if (s.name == "reorg") {
      const int64_t stride = s.get("stride", 2);
      out = in * stride * stride;
    } else if (s.name != "maxpool" && s.name != "avgpool" && s.name != "upsample" && s.name != "shortcut" &&
               s.name != "dropout" && s.name != "yolo" && s.name != "region" && s.name != "softmax" &&
               s.name != "scale_channels" && s.name != "sam") {
      return std::optional<int64_t>();
    }
    channels.push_back(out);
  }
  return std::optional<int64_t>(total);
}

}  // namespace

Status check_darknet_weights(const std::string& weights_path, const std::string& cfg_path, const DarknetConfig& cfg) {
  if (!cfg.weight_count) return ok();
  std::ifstream in(weights_path, std::ios::binary);
  if (!in) return fail(ErrorCode::kModel, "cannot open Darknet weights " + weights_path);
  int32_t version[3] = {0, 0, 0};
  in.read(reinterpret_cast<char*>(version), sizeof version);
  std::error_code ec;
  const auto size = static_cast<int64_t>(fs::file_size(weights_path, ec));
  if (!in || ec) return fail(ErrorCode::kModel, "Darknet weights " + weights_path + " are too short to hold a header");
  const bool long_seen = version[0] * 10 + version[1] >= 2 && version[0] < 1000 && version[1] < 1000;
  const int64_t header = 12 + (long_seen ? 8 : 4);
  const int64_t expected = header + 4 * *cfg.weight_count;
  if (size == expected) return ok();
  return fail(ErrorCode::kModel, "Darknet weights " + weights_path + " hold " + std::to_string(size) + " bytes but " +
                                     fs::path(cfg_path).filename().string() + " needs " + std::to_string(expected) + " (" +
                                     std::to_string(*cfg.weight_count) + " parameters and a " + std::to_string(header) +
                                     "-byte header): " + (size < expected ? "the file is cut short" : "they were made for another cfg"));
}

Result<DarknetConfig> parse_darknet_cfg(const std::string& cfg_path) {
  std::ifstream in(cfg_path);
  if (!in) return fail(ErrorCode::kModel, "cannot open Darknet cfg " + cfg_path);
  DarknetConfig cfg;
  using Section = CfgSection;
  std::vector<Section> sections;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    auto hash = line.find_first_of("#;");
    if (hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']')
        return fail(ErrorCode::kModel, "Darknet cfg " + cfg_path + " line " + std::to_string(line_no) +
                                           ": malformed section header '" + line + "'");
      sections.push_back({lower(line.substr(1, line.size() - 2)), {}});
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos || sections.empty())
      return fail(ErrorCode::kModel, "Darknet cfg " + cfg_path + " line " + std::to_string(line_no) +
                                         ": expected key=value, got '" + line + "'");
    sections.back().kv[lower(trim(line.substr(0, eq)))] = trim(line.substr(eq + 1));
  }
  if (sections.empty() || (sections.front().name != "net" && sections.front().name != "network"))
    return fail(ErrorCode::kModel, "Darknet cfg " + cfg_path + " does not start with a [net] section");
  try {
    const auto& net = sections.front().kv;
    auto get = [&](const std::map<std::string, std::string>& kv, const char* key, const std::string& def) {
      auto it = kv.find(key);
      return it == kv.end() ? def : it->second;
    };
    cfg.width = std::stoi(get(net, "width", "0"));
    cfg.height = std::stoi(get(net, "height", "0"));
    cfg.channels = std::stoi(get(net, "channels", "3"));
    cfg.letter_box = std::stoi(get(net, "letter_box", "0")) != 0;
    if (cfg.width <= 0 || cfg.height <= 0)
      return fail(ErrorCode::kModel, "Darknet cfg " + cfg_path + ": [net] has no valid width/height");
    for (const auto& s : sections) {
      if (s.name != "yolo") continue;
      DarknetYoloLayer layer;
      auto all = parse_float_list(get(s.kv, "anchors", ""));
      std::vector<float> mask_f = parse_float_list(get(s.kv, "mask", ""));
      int num = std::stoi(get(s.kv, "num", std::to_string(all.size() / 2)));
      if (mask_f.empty())
        for (int m = 0; m < num; ++m) mask_f.push_back(static_cast<float>(m));
      for (float mf : mask_f) {
        auto m = static_cast<size_t>(mf);
        if (2 * m + 1 >= all.size())
          return fail(ErrorCode::kModel, "Darknet cfg " + cfg_path + ": [yolo] mask " + std::to_string(m) +
                                             " has no anchor (" + std::to_string(all.size() / 2) + " anchors)");
        layer.anchors.push_back(all[2 * m]);
        layer.anchors.push_back(all[2 * m + 1]);
      }
      layer.classes = std::stoi(get(s.kv, "classes", "80"));
      layer.scale_x_y = std::stof(get(s.kv, "scale_x_y", "1"));
      layer.new_coords = std::stoi(get(s.kv, "new_coords", "0")) != 0;
      cfg.yolo_layers.push_back(std::move(layer));
    }
    SD_ASSIGN_OR_RETURN(cfg.weight_count, count_darknet_weights(sections, cfg.channels, cfg_path));
  } catch (const std::exception& e) {
    return fail(ErrorCode::kModel, "Darknet cfg " + cfg_path + ": bad number (" + e.what() + ")");
  }
  if (cfg.yolo_layers.empty())
    return fail(ErrorCode::kModel, "Darknet cfg " + cfg_path + " has no [yolo] layer (only YOLO heads are supported)");
  return cfg;
}

bool is_darknet_model_path(const std::string& model_path) { return lower(fs::path(model_path).extension().string()) == ".cfg"; }

Result<ModelInfo> inspect_model(const std::string& model_path, const std::string& weights) {
  ModelInfo info;
  info.model_path = model_path;
  std::error_code ec;
  if (!fs::exists(model_path, ec)) return fail(ErrorCode::kModel, "model " + model_path + " does not exist");
  if (fs::is_directory(model_path, ec)) return fail(ErrorCode::kModel, "model " + model_path + " is a directory");
  const std::string ext = lower(fs::path(model_path).extension().string());
  if (is_darknet_model_path(model_path)) {
    info.format = ModelFormat::kDarknet;
    info.weights_path = weights.empty() ? fs::path(model_path).replace_extension(".weights").string() : weights;
    if (!fs::exists(info.weights_path, ec))
      return fail(ErrorCode::kModel, "Darknet weights " + info.weights_path + " do not exist (pass --weights)");
    SD_ASSIGN_OR_RETURN(info.darknet, parse_darknet_cfg(model_path));
    SD_TRY(check_darknet_weights(info.weights_path, model_path, *info.darknet));
    info.imgsz_w = info.darknet->width;
    info.imgsz_h = info.darknet->height;
    return info;
  }
  if (ext == ".weights")
    return fail(ErrorCode::kModel, "model " + model_path + " is Darknet weights: pass the .cfg as --model");
  if (ext != ".onnx")
    return fail(ErrorCode::kModel, "model " + model_path + " has an unknown extension (expected .onnx or .cfg)");
  info.format = ModelFormat::kOnnx;
  SD_TRY(read_onnx_metadata(model_path, info));
  return info;
}

}  // namespace sd
