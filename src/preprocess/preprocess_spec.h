// How a frame becomes the network input: channel order, value scaling, and how the image is
// fitted to the network size. Defaults follow the model family (see spec_for_layout);
// `--preprocess` overrides any part of it.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "core/error.h"
#include "postprocess/layout.h"

namespace sd {

enum class ChannelOrder { kRgb, kBgr };
enum class ResizeMode { kLetterbox, kStretch };
enum class PadPlacement { kCenter, kTopLeft };

struct PreprocessSpec {
  ChannelOrder order = ChannelOrder::kRgb;
  ResizeMode resize = ResizeMode::kLetterbox;
  PadPlacement pad = PadPlacement::kCenter;
  int pad_value = 114;                      // gray of the letterbox border, per channel, 0-255
  float scale = 1.f / 255.f;                // value = (pixel * scale - mean) / std
  std::array<float, 3> mean{0.f, 0.f, 0.f}; // in the network's channel order
  std::array<float, 3> std{1.f, 1.f, 1.f};

  std::string str() const;  // "rgb,letterbox,center,pad=114,scale=0.00392157"
};

// Family defaults: Ultralytics (v5/v8/v10) RGB 0-1 centred letterbox; official YOLOX BGR 0-255
// top-left; Darknet RGB 0-1 stretched unless the cfg says letter_box=1; SSD RGB 0-1 stretched.
PreprocessSpec spec_for_layout(Layout layout, bool darknet_letter_box = false);

// Applies a comma-separated override list to `spec`. Tokens: rgb | bgr | letterbox | stretch |
// center | topleft | scale=F (or scale=1/255) | pad=N | mean=a:b:c | std=a:b:c.
Status apply_preprocess_overrides(std::string_view overrides, PreprocessSpec& spec);

}  // namespace sd
