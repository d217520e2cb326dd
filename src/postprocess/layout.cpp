#include "postprocess/layout.h"

namespace sd {

std::string_view layout_name(Layout layout) {
  switch (layout) {
    case Layout::kAuto: return "auto";
    case Layout::kYoloV8: return "yolov8";
    case Layout::kYoloV5: return "yolov5";
    case Layout::kYoloV10: return "yolov10";
    case Layout::kYoloX: return "yolox";
    case Layout::kSsd: return "ssd";
    case Layout::kDarknet: return "darknet";
  }
  return "auto";
}

std::optional<Layout> parse_layout(std::string_view name) {
  for (Layout l : {Layout::kAuto, Layout::kYoloV8, Layout::kYoloV5, Layout::kYoloV10, Layout::kYoloX,
                   Layout::kSsd, Layout::kDarknet})
    if (layout_name(l) == name) return l;
  // Common aliases.
  if (name == "yolov9" || name == "yolov11" || name == "yolo11") return Layout::kYoloV8;
  if (name == "yolov7") return Layout::kYoloV5;
  if (name == "e2e" || name == "end2end") return Layout::kYoloV10;
  return std::nullopt;
}

}  // namespace sd
