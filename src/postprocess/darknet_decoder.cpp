#include "postprocess/darknet_decoder.h"

#include <cmath>

#include "postprocess/decoder_util.h"

namespace sd {

void DarknetDecoder::decode(std::span<const TensorView> outputs, int batch_index, const DecodeOptions& options,
                            Detections& out) const {
  const int nc = head_.num_classes;
  const float conf = options.conf_threshold;
  const float width = static_cast<float>(options.input_width > 0 ? options.input_width : head_.input_width);
  const float height = static_cast<float>(options.input_height > 0 ? options.input_height : head_.input_height);
  const int64_t entries = 5 + nc;
  for (const DarknetHeadLayer& layer : head_.layers) {
    const TensorView* v = detail::batch_view(outputs, layer.output, 4, batch_index);
    const int64_t na = static_cast<int64_t>(layer.anchors.size() / 2);
    if (!v || nc < 1 || v->shape[1] != na * entries) continue;
    const int64_t gh = v->shape[2], gw = v->shape[3], cells = gh * gw;
    const float stride_x = width / static_cast<float>(gw), stride_y = height / static_cast<float>(gh);
    const float s = layer.scale_x_y, shift = -0.5f * (s - 1.f);
    const bool raw = !layer.new_coords;  // raw logits: sigmoid / exp still to apply
    // Objectness threshold on the value as stored: a raw logit below logit(conf) cannot pass.
    const float obj_floor = raw ? detail::logit_floor(conf) : conf;
    auto act = [raw](float x) { return raw ? detail::sigmoid(x) : x; };
    for (int64_t n = 0; n < na; ++n) {
      const float* p = v->data + (batch_index * na + n) * entries * cells;  // plane k at p + k * cells
      const float* obj_plane = p + 4 * cells;
      for (int64_t cell = 0; cell < cells; ++cell) {
        if (!(obj_plane[cell] >= obj_floor)) continue;
        const float obj = act(obj_plane[cell]);
        if (!(obj >= conf)) continue;
        // Best class on the stored values (the activation is monotonic).
        int best = 0;
        float best_v = p[5 * cells + cell];
        for (int c = 1; c < nc; ++c) {
          const float x = p[(5 + c) * cells + cell];
          if (x > best_v) best_v = x, best = c;
        }
        const float score = obj * act(best_v);
        if (!(score >= conf)) continue;
        const float tx = p[cell], ty = p[cells + cell], tw = p[2 * cells + cell], th = p[3 * cells + cell];
        const float i = static_cast<float>(cell % gw), j = static_cast<float>(cell / gw);
        const float aw = layer.anchors[static_cast<size_t>(2 * n)], ah = layer.anchors[static_cast<size_t>(2 * n + 1)];
        const float cx = (i + act(tx) * s + shift) * stride_x;
        const float cy = (j + act(ty) * s + shift) * stride_y;
        const float w = raw ? std::exp(tw) * aw : tw * tw * 4.f * aw;
        const float h = raw ? std::exp(th) * ah : th * th * 4.f * ah;
        out.push_back(detail::box_from_center(cx, cy, w, h, score, best));
      }
    }
  }
}

}  // namespace sd
