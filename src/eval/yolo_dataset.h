// A dataset as Ultralytics users have it: images under .../images/..., one label file per image
// under .../labels/... (the last "images" folder of the path replaced by "labels", the extension by
// .txt; no file: no objects), each line "class cx cy w h" normalized to [0, 1] (or a polygon
// "class x1 y1 x2 y2 ...", taken as its bounding box), and the class names from a names file (one
// per line) or a data YAML's `names:` (a list, inline or one "- name" a line, or "index: name" lines).
// Image ids are 1, 2, ... in file-name order; category ids are the class indices 0, 1, ...
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "eval/coco_dataset.h"

namespace sd::eval {

// The truth comes normalized (box and area as fractions of the image): the image sizes are known
// once the images are decoded; denormalize_truth() then puts each image's boxes in pixels.
Result<Dataset> read_yolo_dataset(const std::string& names_path, const std::string& image_dir);

// Scales `truth` from fractions of the image to pixels, each image's by its (width, height) in
// `sizes` (by image id; images not there are left as they are).
void denormalize_truth(std::vector<CocoTruth>& truth, const std::unordered_map<int64_t, std::pair<int, int>>& sizes);

// The class names of a names file or data YAML (kSource on a bad file).
Result<std::vector<std::string>> read_yolo_names(const std::string& path);

}  // namespace sd::eval
