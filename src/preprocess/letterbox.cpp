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

namespace {

// Per network channel c: value = pixel[src_channel[c]] * mul[c] + add[c], where pixel is in BGR
// byte order; pad[c] is the border's value.
struct ChannelMap {
  float mul[3], add[3], pad[3];
  int src_channel[3];
  explicit ChannelMap(const PreprocessSpec& spec) {
    for (int c = 0; c < 3; ++c) {
      src_channel[c] = spec.order == ChannelOrder::kRgb ? 2 - c : c;
      mul[c] = spec.scale / spec.std[static_cast<size_t>(c)];
      add[c] = -spec.mean[static_cast<size_t>(c)] / spec.std[static_cast<size_t>(c)];
      pad[c] = static_cast<float>(spec.pad_value) * mul[c] + add[c];
    }
  }
};

// The three output planes and where the content sits in them.
struct PlaneWriter {
  float* plane[3];
  int width, height, x0, y0, content_w, content_h;

  PlaneWriter(float* chw, cv::Size dst, const LetterboxTransform& t, int cw, int ch)
      : width(dst.width), height(dst.height), x0(static_cast<int>(t.pad_x)), y0(static_cast<int>(t.pad_y)),
        content_w(cw), content_h(ch) {
    const size_t n = static_cast<size_t>(dst.width) * static_cast<size_t>(dst.height);
    for (int c = 0; c < 3; ++c) plane[c] = chw + static_cast<size_t>(c) * n;
  }
  // Calls row(sy, d0, d1, d2) for every content row with the destinations of its first pixel and
  // fills the border around the content with the pad values.
  template <typename RowFn>
  void write(const ChannelMap& m, RowFn&& row) const {
    for (int y = 0; y < height; ++y) {
      const size_t r = static_cast<size_t>(y) * static_cast<size_t>(width);
      const int sy = y - y0;
      if (sy < 0 || sy >= content_h) {
        for (int c = 0; c < 3; ++c) std::fill_n(plane[c] + r, width, m.pad[c]);
        continue;
      }
      const int right = width - x0 - content_w;
      for (int c = 0; c < 3; ++c) {
        std::fill_n(plane[c] + r, x0, m.pad[c]);
        std::fill_n(plane[c] + r + x0 + content_w, right, m.pad[c]);
      }
      row(sy, plane[0] + r + x0, plane[1] + r + x0, plane[2] + r + x0);
    }
  }
};

void content_size(const LetterboxTransform& t, cv::Size src, int& cw, int& ch) {
  cw = static_cast<int>(std::lround(t.scale_x * static_cast<float>(src.width)));
  ch = static_cast<int>(std::lround(t.scale_y * static_cast<float>(src.height)));
}

// BT.601 limited range with OpenCV's fixed-point coefficients (ITUR_BT_601_C* / 2^20), so that
// this matches cv::cvtColor(COLOR_YUV2BGR_I420) and FFmpeg's default conversion.
constexpr float kCy = 1220542.f / 1048576.f;
constexpr float kCub = 2116026.f / 1048576.f;
constexpr float kCug = -409993.f / 1048576.f;
constexpr float kCvg = -852492.f / 1048576.f;
constexpr float kCvr = 1673527.f / 1048576.f;

// One row of content, Y/U/V at the same resolution, to the three normalized planes. kRgb: the
// network's channel 0 is red. Written as a plain loop over floats: GCC vectorizes it 16 wide.
template <bool kRgb>
void yuv_row(const uint8_t* __restrict ys, const uint8_t* __restrict us, const uint8_t* __restrict vs, int w,
             const ChannelMap& m, float* __restrict d0, float* __restrict d1, float* __restrict d2) {
  const float m0 = m.mul[0], m1 = m.mul[1], m2 = m.mul[2], a0 = m.add[0], a1 = m.add[1], a2 = m.add[2];
  for (int x = 0; x < w; ++x) {
    const float yy = std::max(static_cast<float>(ys[x]) - 16.f, 0.f) * kCy;
    const float u = static_cast<float>(us[x]) - 128.f, v = static_cast<float>(vs[x]) - 128.f;
    const float r = std::clamp(yy + kCvr * v, 0.f, 255.f);
    const float g = std::clamp(yy + kCug * u + kCvg * v, 0.f, 255.f);
    const float b = std::clamp(yy + kCub * u, 0.f, 255.f);
    d0[x] = (kRgb ? r : b) * m0 + a0;
    d1[x] = g * m1 + a1;
    d2[x] = (kRgb ? b : r) * m2 + a2;
  }
}

// A chroma row at half the width, each sample doubled (nearest, as cvtColor upsamples 4:2:0).
void double_row(const uint8_t* __restrict src, int w, uint8_t* __restrict dst) {
  for (int x = 0; x < w; ++x) dst[x] = src[x >> 1];
}

// `plane` resized to the content size, or itself when it already is.
const cv::Mat& fit_plane(const cv::Mat& plane, int cw, int ch, cv::Mat& scratch) {
  if (plane.cols == cw && plane.rows == ch) return plane;
  cv::resize(plane, scratch, cv::Size(cw, ch), 0, 0, cv::INTER_LINEAR);
  return scratch;
}

}  // namespace

LetterboxTransform preprocess_frame(const cv::Mat& bgr, cv::Size dst, const PreprocessSpec& spec, float* chw,
                                    PreprocessScratch& scratch) {
  CV_Assert(bgr.type() == CV_8UC3);
  LetterboxTransform t = LetterboxTransform::compute(bgr.size(), dst, spec.resize, spec.pad);
  int cw = 0, ch = 0;
  content_size(t, bgr.size(), cw, ch);
  const cv::Mat* content = &bgr;
  if (cw != bgr.cols || ch != bgr.rows) {
    cv::resize(bgr, scratch.resized, cv::Size(cw, ch), 0, 0, cv::INTER_LINEAR);
    content = &scratch.resized;
  }
  const ChannelMap m(spec);
  const int s0 = m.src_channel[0], s1 = m.src_channel[1], s2 = m.src_channel[2];
  PlaneWriter(chw, dst, t, cw, ch).write(m, [&](int sy, float* d0, float* d1, float* d2) {
    const uint8_t* src = content->ptr<uint8_t>(sy);
    for (int x = 0; x < cw; ++x) {
      const uint8_t* px = src + 3 * x;
      d0[x] = static_cast<float>(px[s0]) * m.mul[0] + m.add[0];
      d1[x] = static_cast<float>(px[s1]) * m.mul[1] + m.add[1];
      d2[x] = static_cast<float>(px[s2]) * m.mul[2] + m.add[2];
    }
  });
  return t;
}

LetterboxTransform preprocess_i420(const cv::Mat& i420, cv::Size dst, const PreprocessSpec& spec, float* chw,
                                   PreprocessScratch& scratch) {
  CV_Assert(i420.type() == CV_8UC1 && i420.isContinuous() && i420.rows % 3 == 0 && i420.cols % 2 == 0);
  const int w = i420.cols, h = i420.rows * 2 / 3;
  CV_Assert(h % 2 == 0);
  LetterboxTransform t = LetterboxTransform::compute(cv::Size(w, h), dst, spec.resize, spec.pad);
  int cw = 0, ch = 0;
  content_size(t, cv::Size(w, h), cw, ch);
  // Plane headers over the one buffer. A scaled frame has each plane resized straight to the
  // content size (which also upsamples the chroma, bilinear, where the content is larger than
  // half the frame); an unscaled one is read in place.
  uint8_t* base = const_cast<uint8_t*>(i420.ptr<uint8_t>());
  const cv::Mat y_plane(h, w, CV_8UC1, base);
  const cv::Mat u_plane(h / 2, w / 2, CV_8UC1, base + static_cast<size_t>(w) * h);
  const cv::Mat v_plane(h / 2, w / 2, CV_8UC1, base + static_cast<size_t>(w) * h + static_cast<size_t>(w / 2) * (h / 2));
  const ChannelMap m(spec);
  const bool rgb = spec.order == ChannelOrder::kRgb;
  if (cw == w && ch == h) {
    // Unscaled: read the planes in place, each chroma row serving two rows of Y.
    scratch.u.create(1, w, CV_8UC1);
    scratch.v.create(1, w, CV_8UC1);
    uint8_t *ur = scratch.u.ptr<uint8_t>(), *vr = scratch.v.ptr<uint8_t>();
    PlaneWriter(chw, dst, t, cw, ch).write(m, [&](int sy, float* d0, float* d1, float* d2) {
      if (sy % 2 == 0) {
        double_row(u_plane.ptr<uint8_t>(sy / 2), w, ur);
        double_row(v_plane.ptr<uint8_t>(sy / 2), w, vr);
      }
      const uint8_t* yr = y_plane.ptr<uint8_t>(sy);
      if (rgb) yuv_row<true>(yr, ur, vr, cw, m, d0, d1, d2);
      else yuv_row<false>(yr, ur, vr, cw, m, d0, d1, d2);
    });
    return t;
  }
  const cv::Mat& ys = fit_plane(y_plane, cw, ch, scratch.y);
  const cv::Mat& us = fit_plane(u_plane, cw, ch, scratch.u);
  const cv::Mat& vs = fit_plane(v_plane, cw, ch, scratch.v);
  PlaneWriter(chw, dst, t, cw, ch).write(m, [&](int sy, float* d0, float* d1, float* d2) {
    const uint8_t *yr = ys.ptr<uint8_t>(sy), *ur = us.ptr<uint8_t>(sy), *vr = vs.ptr<uint8_t>(sy);
    if (rgb) yuv_row<true>(yr, ur, vr, cw, m, d0, d1, d2);
    else yuv_row<false>(yr, ur, vr, cw, m, d0, d1, d2);
  });
  return t;
}

LetterboxTransform preprocess_frame(const Frame& frame, cv::Size dst, const PreprocessSpec& spec, float* chw,
                                    PreprocessScratch& scratch) {
  if (frame.format == PixelFormat::kI420) return preprocess_i420(frame.yuv, dst, spec, chw, scratch);
  return preprocess_frame(frame.image, dst, spec, chw, scratch);
}

}  // namespace sd
