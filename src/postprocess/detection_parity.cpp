#include "postprocess/detection_parity.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "postprocess/nms.h"

namespace sd {

Detections decode_yolov8_plain(const float* out, int64_t channels, int64_t anchors, float conf, float iou_threshold) {
  Detections dets;
  const int64_t classes = channels - 4;
  if (classes < 1) return dets;
  auto at = [&](int64_t k, int64_t a) { return out[k * anchors + a]; };
  for (int64_t a = 0; a < anchors; ++a) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (at(4 + c, a) > at(4 + best, a)) best = c;
    const float score = at(4 + best, a);
    if (!(score >= conf)) continue;
    const float cx = at(0, a), cy = at(1, a), w = at(2, a), h = at(3, a);
    Detection d;
    d.x1 = cx - 0.5f * w, d.y1 = cy - 0.5f * h, d.x2 = cx + 0.5f * w, d.y2 = cy + 0.5f * h;  // as box_from_center
    d.score = score;
    d.class_id = static_cast<int>(best);
    dets.push_back(d);
  }
  NmsOptions options;
  options.iou_threshold = iou_threshold;
  Nms().run(dets, options);
  return dets;
}

DetectionParity compare_detections(const Detections& reference, const Detections& candidate, float conf, float margin, float max_px) {
  DetectionParity p;
  p.reference = static_cast<int>(reference.size());
  p.candidate = static_cast<int>(candidate.size());
  std::vector<size_t> order(reference.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return reference[a].score > reference[b].score; });
  std::vector<bool> used(candidate.size(), false);
  auto corner_distance = [](const Detection& a, const Detection& b) {
    return std::max({std::fabs(a.x1 - b.x1), std::fabs(a.y1 - b.y1), std::fabs(a.x2 - b.x2), std::fabs(a.y2 - b.y2)});
  };
  const float edge = conf + margin;
  for (size_t i : order) {
    const Detection& r = reference[i];
    int best = -1;
    float best_iou = -1;
    for (size_t j = 0; j < candidate.size(); ++j) {
      if (used[j] || candidate[j].class_id != r.class_id) continue;
      const float o = iou(r, candidate[j]);
      if (o > best_iou) best_iou = o, best = static_cast<int>(j);
    }
    if (best >= 0 && corner_distance(r, candidate[static_cast<size_t>(best)]) <= max_px) {
      used[static_cast<size_t>(best)] = true;
      ++p.matched;
      p.max_corner_px = std::max<double>(p.max_corner_px, corner_distance(r, candidate[static_cast<size_t>(best)]));
    } else {
      ++(r.score >= edge ? p.missing : p.borderline);
    }
  }
  for (size_t j = 0; j < candidate.size(); ++j)
    if (!used[j]) ++(candidate[j].score >= edge ? p.extra : p.borderline);
  return p;
}

}  // namespace sd
