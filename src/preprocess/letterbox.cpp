#include "preprocess/letterbox.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

namespace sd {

LetterboxTransform LetterboxTransform::compute(cv::Size src, cv::Size dst, ResizeMode mode, PadPlacement pad) {
  LetterboxTransform t;
  t.src_width = src.width;
  t.src_height = src.height;
  t.dst_width = dst.width;
  t.dst_height = dst.height;
  if (mode == ResizeMode::kStretch) {
    t.scale_x = static_cast<float>(dst.width) / static_cast<float>(src.width);
    t.scale_y = static_cast<float>(dst.height) / static_cast<float>(src.height);
    return t;
  }
  double r = std::min(static_cast<double>(dst.width) / src.width, static_cast<double>(dst.height) / src.height);
  int new_w = std::min(dst.width, static_cast<int>(std::lround(src.width * r)));
  int new_h = std::min(dst.height, static_cast<int>(std::lround(src.height * r)));
  // The effective per-axis scale of the resized content, so mapping back is exact.
  t.scale_x = static_cast<float>(new_w) / static_cast<float>(src.width);
  t.scale_y = static_cast<float>(new_h) / static_cast<float>(src.height);
  if (pad == PadPlacement::kCenter) {
    t.pad_x = static_cast<float>((dst.width - new_w) / 2);
    t.pad_y = static_cast<float>((dst.height - new_h) / 2);
  }
  return t;
}

void LetterboxTransform::map_back(Detection& d) const {
  auto fx = [&](float x) { return std::clamp((x - pad_x) / scale_x, 0.f, static_cast<float>(src_width)); };
  auto fy = [&](float y) { return std::clamp((y - pad_y) / scale_y, 0.f, static_cast<float>(src_height)); };
  d.x1 = fx(d.x1);
  d.x2 = fx(d.x2);
  d.y1 = fy(d.y1);
  d.y2 = fy(d.y2);
}

void LetterboxTransform::map_forward(Detection& d) const {
  d.x1 = d.x1 * scale_x + pad_x;
  d.x2 = d.x2 * scale_x + pad_x;
  d.y1 = d.y1 * scale_y + pad_y;
  d.y2 = d.y2 * scale_y + pad_y;
}

LetterboxTransform preprocess_frame(const cv::Mat& bgr, cv::Size dst, const PreprocessSpec& spec, float* chw,
                                    PreprocessScratch& scratch) {
  CV_Assert(bgr.type() == CV_8UC3);
  LetterboxTransform t = LetterboxTransform::compute(bgr.size(), dst, spec.resize, spec.pad);
  int content_w = static_cast<int>(std::lround(t.scale_x * bgr.cols));
  int content_h = static_cast<int>(std::lround(t.scale_y * bgr.rows));
  const cv::Mat* content = &bgr;
  if (content_w != bgr.cols || content_h != bgr.rows) {
    cv::resize(bgr, scratch.resized, cv::Size(content_w, content_h), 0, 0, cv::INTER_LINEAR);
    content = &scratch.resized;
  }
  const int x0 = static_cast<int>(t.pad_x), y0 = static_cast<int>(t.pad_y);
  const size_t plane = static_cast<size_t>(dst.width) * static_cast<size_t>(dst.height);
  // Per output channel c: which BGR byte feeds it, and value = byte * mul + add.
  float mul[3], add[3], pad_val[3];
  int src_channel[3];
  for (int c = 0; c < 3; ++c) {
    src_channel[c] = spec.order == ChannelOrder::kRgb ? 2 - c : c;
    mul[c] = spec.scale / spec.std[static_cast<size_t>(c)];
    add[c] = -spec.mean[static_cast<size_t>(c)] / spec.std[static_cast<size_t>(c)];
    pad_val[c] = static_cast<float>(spec.pad_value) * mul[c] + add[c];
  }
  float* p0 = chw;
  float* p1 = chw + plane;
  float* p2 = chw + 2 * plane;
  for (int y = 0; y < dst.height; ++y) {
    const size_t row = static_cast<size_t>(y) * static_cast<size_t>(dst.width);
    const int sy = y - y0;
    if (sy < 0 || sy >= content->rows) {
      std::fill_n(p0 + row, dst.width, pad_val[0]);
      std::fill_n(p1 + row, dst.width, pad_val[1]);
      std::fill_n(p2 + row, dst.width, pad_val[2]);
      continue;
    }
    std::fill_n(p0 + row, x0, pad_val[0]);
    std::fill_n(p1 + row, x0, pad_val[1]);
    std::fill_n(p2 + row, x0, pad_val[2]);
    const uint8_t* src = content->ptr<uint8_t>(sy);
    float* d0 = p0 + row + x0;
    float* d1 = p1 + row + x0;
    float* d2 = p2 + row + x0;
    const int w = content->cols;
    const int s0 = src_channel[0], s1 = src_channel[1], s2 = src_channel[2];
    for (int x = 0; x < w; ++x) {
      const uint8_t* px = src + 3 * x;
      d0[x] = static_cast<float>(px[s0]) * mul[0] + add[0];
      d1[x] = static_cast<float>(px[s1]) * mul[1] + add[1];
      d2[x] = static_cast<float>(px[s2]) * mul[2] + add[2];
    }
    const int right = dst.width - x0 - w;
    std::fill_n(d0 + w, right, pad_val[0]);
    std::fill_n(d1 + w, right, pad_val[1]);
    std::fill_n(d2 + w, right, pad_val[2]);
  }
  return t;
}

}  // namespace sd
