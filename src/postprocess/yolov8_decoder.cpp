#include "postprocess/yolov8_decoder.h"

#include <algorithm>

#include "postprocess/decoder_util.h"
#include "postprocess/score_scan.h"

namespace sd {
namespace {

// Anchors per block of the channel-major scan: the running maxima (2 KB) stay in L1 while the
// class rows stream through.
constexpr int kBlock = 512;

// Channel-major [4+nc, A] for one image: rows 0..3 are cx, cy, w, h; rows 4.. the class scores.
void decode_channel_major(const float* base, int64_t anchors, int nc, float conf, Detections& out) {
  const float* cls = base + 4 * anchors;
  float best[kBlock];
  for (int64_t a0 = 0; a0 < anchors; a0 += kBlock) {
    const int n = static_cast<int>(std::min<int64_t>(kBlock, anchors - a0));
    scan::column_max(cls + a0, anchors, nc, n, best);
    for (int j = 0; j < n; ++j) {
      if (!(best[j] >= conf)) continue;
      const int64_t a = a0 + j;
      const int c = scan::column_find(cls + a, anchors, nc, best[j]);
      if (c < 0) continue;
      const float score = cls[c * anchors + a];
      out.push_back(detail::box_from_center(base[a], base[anchors + a], base[2 * anchors + a],
                                            base[3 * anchors + a], score, c));
    }
  }
}

// Anchor-major [A, 4+nc] for one image.
void decode_anchor_major(const float* base, int64_t anchors, int nc, float conf, Detections& out) {
  const int64_t row = 4 + nc;
  for (int64_t a = 0; a < anchors; ++a) {
    const float* p = base + a * row;
    if (!scan::row_any_at_least(p + 4, nc, conf)) continue;
    const int c = scan::row_argmax(p + 4, nc);
    out.push_back(detail::box_from_center(p[0], p[1], p[2], p[3], p[4 + c], c));
  }
}

}  // namespace

void YoloV8Decoder::decode(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
                           Detections& out) const {
  const TensorView* v = detail::batch_view(outputs, head_.output, 3, batch_index);
  const int nc = head_.num_classes;
  if (!v || nc < 1) return;
  const int64_t channels = head_.transposed ? v->shape[2] : v->shape[1];
  const int64_t anchors = head_.transposed ? v->shape[1] : v->shape[2];
  if (channels != 4 + nc) return;
  const float* base = v->data + batch_index * channels * anchors;
  if (head_.transposed)
    decode_anchor_major(base, anchors, nc, options.conf_threshold, out);
  else
    decode_channel_major(base, anchors, nc, options.conf_threshold, out);
}

void YoloV8Decoder::decode_plain(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
                                 Detections& out) const {
  const TensorView* v = detail::batch_view(outputs, head_.output, 3, batch_index);
  const int nc = head_.num_classes;
  if (!v || nc < 1) return;
  const int64_t channels = head_.transposed ? v->shape[2] : v->shape[1];
  const int64_t anchors = head_.transposed ? v->shape[1] : v->shape[2];
  if (channels != 4 + nc) return;
  const float* base = v->data + batch_index * channels * anchors;
  // Element (channel k, anchor a) of this image.
  auto at = [&](int64_t k, int64_t a) { return head_.transposed ? base[a * channels + k] : base[k * anchors + a]; };
  for (int64_t a = 0; a < anchors; ++a) {
    int best = 0;
    for (int c = 1; c < nc; ++c)
      if (at(4 + c, a) > at(4 + best, a)) best = c;
    const float score = at(4 + best, a);
    if (score >= options.conf_threshold)
      out.push_back(detail::box_from_center(at(0, a), at(1, a), at(2, a), at(3, a), score, best));
  }
}

}  // namespace sd
