#include "postprocess/yolov5_decoder.h"

#include "postprocess/decoder_util.h"
#include "postprocess/score_scan.h"

namespace sd {

void YoloV5Decoder::decode(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
                           Detections& out) const {
  const TensorView* v = detail::batch_view(outputs, head_.output, 3, batch_index);
  const int nc = head_.num_classes;
  if (!v || nc < 1 || v->shape[2] != 5 + nc) return;
  const int64_t anchors = v->shape[1], row = 5 + nc;
  const float conf = options.conf_threshold;
  const float* base = v->data + batch_index * anchors * row;
  for (int64_t a = 0; a < anchors; ++a) {
    const float* p = base + a * row;
    const float obj = p[4];
    if (!(obj >= conf)) continue;
    const int c = scan::row_argmax(p + 5, nc);
    const float score = obj * p[5 + c];
    if (score >= conf) out.push_back(detail::box_from_center(p[0], p[1], p[2], p[3], score, c));
  }
}

}  // namespace sd
