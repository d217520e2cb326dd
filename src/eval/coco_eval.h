// COCO's detection metrics computed the way pycocotools' COCOeval (iouType "bbox") computes them,
// so that a figure here can be put beside one from pycocotools, Ultralytics or YOLOX:
// - per image and category, detections sorted by score (stable) and cut to maxDets, matched greedily
//   to the unmatched ground truth of highest IoU >= the threshold; ground truth outside the area
//   range or crowd is "ignored" (a detection matching it counts neither way; non-ignored boxes are
//   preferred); a crowd region may take any number of detections, its IoU being intersection over
//   the detection's area;
// - precision at 101 recall points (0, 0.01, ..., 1), made monotone, averaged over 10 IoU
//   thresholds (0.5:0.05:0.95) and over the categories that have ground truth (-1 where none has);
// - the 12 summary figures in pycocotools' order.
// The IoU thresholds, recall points and their float rounding are numpy's linspace, as in COCOeval.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace sd::eval {

// A box as COCO writes it: left, top, width, height in image pixels.
struct CocoBox {
  double x = 0, y = 0, w = 0, h = 0;
};

struct CocoTruth {
  int64_t image_id = 0;
  int64_t category_id = 0;
  CocoBox box;
  double area = 0;  // the annotation's "area" (the segment's area in COCO): decides small/medium/large
  bool crowd = false;
};

struct CocoResult {
  int64_t image_id = 0;
  int64_t category_id = 0;
  CocoBox box;
  double score = 0;
};

// The 12 figures of COCOeval.summarize(), in its order.
inline constexpr int kCocoStats = 12;
extern const std::array<const char*, kCocoStats> kCocoStatNames;  // "AP", "AP50", ..., "ARl"

struct CocoMetrics {
  std::array<double, kCocoStats> stats{};  // -1 where there is nothing to average (as pycocotools)
  // AP@[.5:.95] (area all, 100 detections) of each category, in the order of `category_ids`
  // given; -1 for a category without ground truth.
  std::vector<double> category_ap;
  std::vector<double> category_ap50;
};

// Evaluates `results` against `truth` over `image_ids` and `category_ids` (the dataset's; results
// on other images or categories are not counted, as in COCOeval with params.imgIds/catIds set).
// Images and categories may be given in any order.
CocoMetrics evaluate_coco(const std::vector<int64_t>& image_ids, const std::vector<int64_t>& category_ids,
                          const std::vector<CocoTruth>& truth, const std::vector<CocoResult>& results);

// COCOeval.summarize()'s 12 lines, as it prints them (" Average Precision  (AP) @[ IoU=0.50:0.95 | ...").
std::string format_coco_summary(const CocoMetrics& metrics);

// IoU of two boxes as pycocotools' maskApi bbIou: for a crowd `truth`, intersection / det area.
double coco_box_iou(const CocoBox& det, const CocoBox& truth, bool crowd);

}  // namespace sd::eval
