// `streamdet val`: the detector's accuracy on a dataset, as COCO measures it (eval/coco_eval.h:
// the 12 figures of pycocotools, per-class AP), with the time per image. A COCO instances JSON and
// its image folder, or a YOLO-format dataset (eval/yolo_dataset.h). Its defaults are the ones mAP
// needs: confidence 0.001, up to 300 boxes per image, NMS IoU 0.7 (Ultralytics' val).
#pragma once

#include <cstdint>
#include <string>

#include <CLI/App.hpp>

#include "core/error.h"
#include "runtime/run_options.h"

namespace sd {

struct ValOptions {
  ModelOptions model;            // conf, iou and max_det set to val's defaults before the options are added
  std::string data;              // COCO instances JSON, or a YOLO names file / data YAML
  std::string images;            // the image folder
  std::string format = "auto";  // auto (by --data's extension: .json is COCO), coco, yolo
  std::string save_json;         // detections in COCO's results format
  int64_t max_images = -1;       // the first N images only (-1: all)
  bool json = false;
  bool quiet = false;
};

// val's defaults on top of ModelOptions' (call before the shared model options are added).
void set_val_defaults(ValOptions& options);
void add_val_options(CLI::App& cmd, ValOptions& options);
Status run_val(const ValOptions& options);

}  // namespace sd
