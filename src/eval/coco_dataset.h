// A detection dataset in COCO's form, read from a COCO instances JSON (images, annotations,
// categories) and an image folder; the YOLO reader (eval/yolo_dataset.h) gives the same form.
// Bad input is one line naming the file and the entry, ErrorCode::kSource (exit 4).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "eval/coco_eval.h"

namespace sd::eval {

struct DatasetImage {
  int64_t id = 0;
  std::string path;  // the image file
  std::string file_name;  // as the dataset names it
};

struct DatasetCategory {
  int64_t id = 0;
  std::string name;
};

struct Dataset {
  std::vector<DatasetImage> images;        // in the dataset's order
  std::vector<DatasetCategory> categories;  // in the dataset's order
  std::vector<CocoTruth> truth;
};

// `json_path`: COCO instances JSON; `image_dir`: the folder its images' file_name are relative to.
// Every image must exist there, every annotation name an image and a category of the file.
Result<Dataset> read_coco_dataset(const std::string& json_path, const std::string& image_dir);

// Which dataset category each of a model's classes is (a COCO-80 detector's class 0..79 against
// COCO's ids 1..90 with gaps): by name when every named category of the dataset is one of the
// model's class names (classes the dataset lacks map to none); else by order when the counts are
// equal (class i: the dataset's i-th category); else kUsage, naming both.
struct ClassMapping {
  bool by_name = false;
  std::vector<int64_t> category_of_class;  // per model class; -1: not in the dataset
};
Result<ClassMapping> map_model_classes(const std::vector<std::string>& model_names, const std::vector<DatasetCategory>& categories);

}  // namespace sd::eval
