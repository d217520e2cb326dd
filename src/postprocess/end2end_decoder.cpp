#include "postprocess/end2end_decoder.h"

#include <cmath>

#include "postprocess/decoder_util.h"

namespace sd {
namespace {

int class_of(float v) { return static_cast<int>(std::lround(v)); }

}  // namespace

void End2EndDecoder::decode(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
                            Detections& out) const {
  const float conf = options.conf_threshold;
  if (head_.with_batch_column) {
    if (head_.output < 0 || head_.output >= static_cast<int>(outputs.size())) return;
    const TensorView& v = outputs[static_cast<size_t>(head_.output)];
    if (!v.data || v.shape.rank != 2 || v.shape[1] != 7) return;
    for (int64_t k = 0; k < v.shape[0]; ++k) {
      const float* p = v.data + k * 7;
      if (class_of(p[0]) != batch_index || !(p[6] >= conf)) continue;
      out.push_back(Detection{p[1], p[2], p[3], p[4], p[6], class_of(p[5])});
    }
    return;
  }
  const TensorView* v = detail::batch_view(outputs, head_.output, 3, batch_index);
  if (!v || v->shape[2] != 6) return;
  const int64_t rows = v->shape[1];
  const float* base = v->data + batch_index * rows * 6;
  for (int64_t k = 0; k < rows; ++k) {
    const float* p = base + k * 6;
    if (p[4] >= conf) out.push_back(Detection{p[0], p[1], p[2], p[3], p[4], class_of(p[5])});
  }
}

}  // namespace sd
