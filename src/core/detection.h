// One detected object. Coordinates are pixels: in network-input space right after decoding,
// in original-frame space after Letterbox::map_back.
#pragma once

#include <cstdint>
#include <vector>

namespace sd {

struct Detection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  float score = 0;
  int class_id = 0;
  int64_t track_id = -1;  // the object's identity with --track (1, 2, ... per source); -1: not tracked
};

using Detections = std::vector<Detection>;

// Boxes from one picture's pixels to another's of a different size (a frame decoded at a reduced
// scale and its original).
inline void scale_boxes(Detections& detections, float sx, float sy) {
  for (Detection& d : detections) {
    d.x1 *= sx;
    d.x2 *= sx;
    d.y1 *= sy;
    d.y2 *= sy;
  }
}

inline float box_area(const Detection& d) {
  float w = d.x2 - d.x1, h = d.y2 - d.y1;
  return (w > 0 && h > 0) ? w * h : 0.f;
}

inline float iou(const Detection& a, const Detection& b) {
  float ix1 = a.x1 > b.x1 ? a.x1 : b.x1;
  float iy1 = a.y1 > b.y1 ? a.y1 : b.y1;
  float ix2 = a.x2 < b.x2 ? a.x2 : b.x2;
  float iy2 = a.y2 < b.y2 ? a.y2 : b.y2;
  float iw = ix2 - ix1, ih = iy2 - iy1;
  if (iw <= 0 || ih <= 0) return 0.f;
  float inter = iw * ih;
  float uni = box_area(a) + box_area(b) - inter;
  return uni > 0 ? inter / uni : 0.f;
}

}  // namespace sd
