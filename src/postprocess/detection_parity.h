// Whether two runs of one model found the same objects: the GPU check's fp16 verdict (issue 22:
// "fp16 detections the same set as fp32: same classes, boxes within 1 px"). Plain C++ on the
// model's raw outputs, with no OpenCV, so that streamdet_gpu_check (the native engine alone) can
// use it; the YOLOv8 decoding here is the plain reference of YoloV8Decoder::decode_plain (best
// class per anchor above the threshold, box from centre and size) followed by Nms::run.
#pragma once

#include <cstdint>

#include "core/detection.h"

namespace sd {

// One image of a YOLOv8 head's output [4 + classes, anchors] (channel-major: cx, cy, w, h in
// input pixels, then the class scores): the boxes above `conf`, class-aware NMS at `iou`.
Detections decode_yolov8_plain(const float* image_output, int64_t channels, int64_t anchors, float conf, float iou);

struct DetectionParity {
  int reference = 0, candidate = 0;  // detections in each set
  int matched = 0;                   // pairs of one class with every corner within max_px
  // Unmatched detections scored at least conf + margin: a real difference between the sets.
  int missing = 0, extra = 0;        // in the reference only / in the candidate only
  // Unmatched ones scored below conf + margin: on the threshold's edge, where fp16's rounding of
  // a score (about 2.4e-4 near 0.5) may put it on the other side; reported, not a difference.
  int borderline = 0;
  double max_corner_px = 0;          // the largest corner distance of a matched pair (per axis)
  bool same() const { return missing == 0 && extra == 0; }
};

// Greedy matching, highest reference score first: the unmatched candidate of the same class with
// the highest IoU, matched when each of its corners is within max_px of the reference's.
DetectionParity compare_detections(const Detections& reference, const Detections& candidate, float conf, float margin,
                                   float max_px);

}  // namespace sd
