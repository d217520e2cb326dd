// The 80 class names of the COCO detection benchmark, in the contiguous order detectors trained on
// COCO use for class ids 0..79 (Ultralytics, Darknet coco.names, torchvision/NVIDIA SSD minus the
// background class).
#pragma once

#include <string>
#include <vector>

namespace sd {

const std::vector<std::string>& coco80_names();

}  // namespace sd
