#include "preprocess/preprocess_spec.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

namespace sd {

namespace {

bool parse_float(std::string_view text, float& out) {
  std::string s(text);
  auto slash = s.find('/');
  try {
    size_t used = 0;
    if (slash != std::string::npos) {
      float num = std::stof(s.substr(0, slash), &used);
      if (used != slash) return false;
      std::string den_s = s.substr(slash + 1);
      float den = std::stof(den_s, &used);
      if (used != den_s.size() || den == 0.f) return false;
      out = num / den;
      return std::isfinite(out);
    }
    out = std::stof(s, &used);
    return used == s.size() && std::isfinite(out);
  } catch (...) {
    return false;
  }
}

bool parse_triple(std::string_view text, std::array<float, 3>& out) {
  std::array<float, 3> v{};
  size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    size_t end = text.find(':', start);
    if ((i < 2) != (end != std::string_view::npos)) return false;
    if (!parse_float(text.substr(start, end == std::string_view::npos ? text.size() - start : end - start), v[i]))
      return false;
    start = end + 1;
  }
  out = v;
  return true;
}

}  // namespace

std::string PreprocessSpec::str() const {
  std::ostringstream os;
  os << (order == ChannelOrder::kRgb ? "rgb" : "bgr") << ','
     << (resize == ResizeMode::kLetterbox ? "letterbox" : "stretch") << ','
     << (pad == PadPlacement::kCenter ? "center" : "topleft") << ",pad=" << pad_value << ",scale=" << scale;
  if (mean != std::array<float, 3>{0, 0, 0}) os << ",mean=" << mean[0] << ':' << mean[1] << ':' << mean[2];
  if (std != std::array<float, 3>{1, 1, 1}) os << ",std=" << std[0] << ':' << std[1] << ':' << std[2];
  return os.str();
}

PreprocessSpec spec_for_layout(Layout layout, bool darknet_letter_box) {
  PreprocessSpec spec;  // Ultralytics defaults: RGB, 0-1, centred letterbox, pad 114
  switch (layout) {
    case Layout::kYoloX:
      spec.order = ChannelOrder::kBgr;
      spec.scale = 1.f;
      spec.pad = PadPlacement::kTopLeft;
      break;
    case Layout::kDarknet:
      spec.resize = darknet_letter_box ? ResizeMode::kLetterbox : ResizeMode::kStretch;
      spec.pad_value = 127;  // Darknet's letterbox fills with 0.5
      break;
    case Layout::kSsd:
      spec.resize = ResizeMode::kStretch;
      break;
    default:
      break;
  }
  return spec;
}

Status apply_preprocess_overrides(std::string_view overrides, PreprocessSpec& spec) {
  size_t start = 0;
  while (start <= overrides.size()) {
    size_t end = overrides.find(',', start);
    if (end == std::string_view::npos) end = overrides.size();
    std::string_view token = overrides.substr(start, end - start);
    start = end + 1;
    if (token.empty()) {
      if (end == overrides.size()) break;
      continue;
    }
    auto bad = [&](const char* why) {
      return fail(ErrorCode::kUsage, "--preprocess token '" + std::string(token) + "': " + why);
    };
    if (token == "rgb") spec.order = ChannelOrder::kRgb;
    else if (token == "bgr") spec.order = ChannelOrder::kBgr;
    else if (token == "letterbox") spec.resize = ResizeMode::kLetterbox;
    else if (token == "stretch") spec.resize = ResizeMode::kStretch;
    else if (token == "center" || token == "centre") spec.pad = PadPlacement::kCenter;
    else if (token == "topleft") spec.pad = PadPlacement::kTopLeft;
    else if (token.starts_with("scale=")) {
      if (!parse_float(token.substr(6), spec.scale) || spec.scale == 0.f)
        return bad("expected scale=F or scale=A/B, finite and non-zero");
    } else if (token.starts_with("pad=")) {
      float v;
      if (!parse_float(token.substr(4), v) || v < 0 || v > 255) return bad("expected pad=0..255");
      spec.pad_value = static_cast<int>(v);
    } else if (token.starts_with("mean=")) {
      if (!parse_triple(token.substr(5), spec.mean)) return bad("expected mean=a:b:c, finite numbers");
    } else if (token.starts_with("std=")) {
      if (!parse_triple(token.substr(4), spec.std) || spec.std[0] == 0 || spec.std[1] == 0 || spec.std[2] == 0)
        return bad("expected std=a:b:c, finite and non-zero");
    } else {
      return bad("unknown (use rgb, bgr, letterbox, stretch, center, topleft, scale=, pad=, mean=, std=)");
    }
    if (end == overrides.size()) break;
  }
  return ok();
}

}  // namespace sd
