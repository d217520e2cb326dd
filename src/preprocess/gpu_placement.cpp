#include "preprocess/gpu_placement.h"

#include <cmath>

namespace sd {

GpuInputPlacement gpu_input_placement(const LetterboxTransform& t, const PreprocessSpec& spec) {
  GpuInputPlacement p;
  p.dst_width = t.dst_width;
  p.dst_height = t.dst_height;
  // As letterbox.cpp's content_size and PlaneWriter: the pads are whole pixels.
  p.content_width = static_cast<int>(std::lround(t.scale_x * static_cast<float>(t.src_width)));
  p.content_height = static_cast<int>(std::lround(t.scale_y * static_cast<float>(t.src_height)));
  p.x0 = static_cast<int>(t.pad_x);
  p.y0 = static_cast<int>(t.pad_y);
  for (int c = 0; c < 3; ++c) {
    const size_t k = static_cast<size_t>(c);
    p.src_channel[c] = spec.order == ChannelOrder::kRgb ? 2 - c : c;
    p.mul[c] = spec.scale / spec.std[k];
    p.add[c] = -spec.mean[k] / spec.std[k];
    p.pad[c] = static_cast<float>(spec.pad_value) * p.mul[c] + p.add[c];
  }
  return p;
}

}  // namespace sd
