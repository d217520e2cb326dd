// Output-head layouts the decoders understand, and their names on the command line.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sd {

enum class Layout {
  kAuto,
  kYoloV8,    // [N, 4+nc, A]: cx, cy, w, h, class scores (no objectness)   (YOLOv8/v9/v11)
  kYoloV5,    // [N, A, 5+nc]: cx, cy, w, h, objectness, class scores       (YOLOv5/v7)
  kYoloV10,   // [N, K, 6]: x1, y1, x2, y2, score, class (end-to-end, NMS in the model)
  kYoloX,     // [N, A, 5+nc]: raw grid outputs, decoded with strides 8/16/32
  kSsd,       // boxes [N, A, 4] + scores [N, A, C] (background class 0), with or without priors
  kDarknet,   // Darknet [yolo] layers: raw [N, na*(5+nc), H, W] per layer, anchors from the cfg
};

std::string_view layout_name(Layout layout);
std::optional<Layout> parse_layout(std::string_view name);

}  // namespace sd
