#include "postprocess/yolox_decoder.h"

#include <cmath>

#include "postprocess/decoder_util.h"
#include "postprocess/score_scan.h"

namespace sd {

int64_t grid_cells(int input_width, int input_height, const std::vector<int>& strides) {
  if (input_width <= 0 || input_height <= 0) return -1;
  int64_t cells = 0;
  for (int s : strides) {
    if (s <= 0) return -1;
    cells += static_cast<int64_t>((input_width + s - 1) / s) * ((input_height + s - 1) / s);
  }
  return cells;
}

void YoloXDecoder::decode(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
                          Detections& out) const {
  const TensorView* v = detail::batch_view(outputs, head_.output, 3, batch_index);
  const int nc = head_.num_classes;
  if (!v || nc < 1 || v->shape[2] != 5 + nc) return;
  const int width = options.input_width > 0 ? options.input_width : head_.input_width;
  const int height = options.input_height > 0 ? options.input_height : head_.input_height;
  const int64_t anchors = v->shape[1], row = 5 + nc;
  if (grid_cells(width, height, head_.strides) != anchors) return;
  const float conf = options.conf_threshold;
  const float* p = v->data + batch_index * anchors * row;
  for (int s : head_.strides) {
    const int gw = (width + s - 1) / s, gh = (height + s - 1) / s;
    const float stride = static_cast<float>(s);
    for (int gy = 0; gy < gh; ++gy) {
      for (int gx = 0; gx < gw; ++gx, p += row) {
        const float obj = p[4];
        if (!(obj >= conf)) continue;
        const int c = scan::row_argmax(p + 5, nc);
        const float score = obj * p[5 + c];
        if (!(score >= conf)) continue;
        const float cx = (p[0] + static_cast<float>(gx)) * stride;
        const float cy = (p[1] + static_cast<float>(gy)) * stride;
        out.push_back(detail::box_from_center(cx, cy, std::exp(p[2]) * stride, std::exp(p[3]) * stride, score, c));
      }
    }
  }
}

}  // namespace sd
