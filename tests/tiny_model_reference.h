// A deliberately plain reference detector for tests: OpenCV DNN inference of a YOLOv8-format
// model ([1, 4 + nc, N]: cx, cy, w, h in input pixels, then sigmoid class scores), Ultralytics
// letterbox (centred, pad 114, RGB, /255), confidence filter, class-aware greedy NMS, boxes
// mapped back to the frame. It is the oracle that the project's own tiny model is checked with,
// independent of the pipeline's preprocess/decoder/NMS code.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>

#include "core/detection.h"

namespace sd::testing {

inline Detections reference_yolov8_detect(cv::dnn::Net& net, const cv::Mat& bgr, cv::Size input, float conf = 0.25f,
                                          float iou_threshold = 0.45f) {
  const float r = std::min(static_cast<float>(input.width) / bgr.cols, static_cast<float>(input.height) / bgr.rows);
  const int nw = static_cast<int>(std::lround(bgr.cols * r)), nh = static_cast<int>(std::lround(bgr.rows * r));
  const int left = (input.width - nw) / 2, top = (input.height - nh) / 2;
  cv::Mat canvas(input, CV_8UC3, cv::Scalar(114, 114, 114)), resized;
  cv::resize(bgr, resized, cv::Size(nw, nh), 0, 0, cv::INTER_LINEAR);
  resized.copyTo(canvas(cv::Rect(left, top, nw, nh)));
  net.setInput(cv::dnn::blobFromImage(canvas, 1.0 / 255.0, input, cv::Scalar(), /*swapRB=*/true, false));
  const cv::Mat out = net.forward();  // [1, 4 + nc, N]
  const int rows = out.size[1], n = out.size[2], nc = rows - 4;
  const auto* p = out.ptr<float>();

  Detections candidates;
  for (int i = 0; i < n; ++i) {
    int best = 0;
    for (int c = 1; c < nc; ++c)
      if (p[(4 + c) * n + i] > p[(4 + best) * n + i]) best = c;
    const float score = p[(4 + best) * n + i];
    if (score < conf) continue;
    const float cx = p[i], cy = p[n + i], w = p[2 * n + i], h = p[3 * n + i];
    Detection d;
    d.x1 = cx - w / 2, d.y1 = cy - h / 2, d.x2 = cx + w / 2, d.y2 = cy + h / 2;
    d.score = score;
    d.class_id = best;
    candidates.push_back(d);
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const Detection& a, const Detection& b) {
    return a.score > b.score;
  });
  Detections kept;
  for (const Detection& d : candidates) {
    bool suppressed = false;
    for (const Detection& k : kept)
      if (k.class_id == d.class_id && iou(k, d) > iou_threshold) suppressed = true;
    if (suppressed) continue;
    kept.push_back(d);
  }
  for (Detection& d : kept) {  // back to frame pixels, clipped
    d.x1 = std::clamp((d.x1 - left) / r, 0.f, static_cast<float>(bgr.cols));
    d.x2 = std::clamp((d.x2 - left) / r, 0.f, static_cast<float>(bgr.cols));
    d.y1 = std::clamp((d.y1 - top) / r, 0.f, static_cast<float>(bgr.rows));
    d.y2 = std::clamp((d.y2 - top) / r, 0.f, static_cast<float>(bgr.rows));
  }
  return kept;
}

}  // namespace sd::testing
