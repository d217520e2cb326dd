// Test vectors of the GPU frame kernels (engine/native/cuda/frame_kernels.h, detect_kernels.h)
// and their plain C++ references, with no OpenCV so that streamdet_native_tests (the GPU
// machine's tests) can use them. gpu_frames_reference_test.cpp checks these references against
// the CPU path itself (preprocess_frame, preprocess_i420, YoloV8Decoder) on the same vectors;
// gpu_frames_test.cpp checks the GPU against them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/detection.h"
#include "engine/native/cuda/frame_kernels.h"
#include "preprocess/preprocess_spec.h"

namespace sd::test::gpu_frames {

using native::cuda::InputPlacement;

struct FrameCase {
  int src_w, src_h, dst_w, dst_h;
  PreprocessSpec spec;
};

inline PreprocessSpec bgr_mean_std_topleft() {
  PreprocessSpec s;
  s.order = ChannelOrder::kBgr;
  s.pad = PadPlacement::kTopLeft;
  s.scale = 1.f;
  s.pad_value = 0;
  s.mean = {103.5f, 116.3f, 123.7f};
  s.std = {57.4f, 57.1f, 58.4f};
  return s;
}

inline PreprocessSpec stretch() {
  PreprocessSpec s;
  s.resize = ResizeMode::kStretch;
  return s;
}

// Several sizes and aspect ratios: downscale, upscale, odd sizes, 1x1, a frame larger than the
// input, the input's own size (no resize), very wide and very tall.
inline std::vector<FrameCase> bgr_cases() {
  return {{1920, 1080, 640, 640, {}}, {640, 480, 640, 640, {}},   {641, 479, 320, 256, {}},
          {1, 1, 64, 64, {}},         {3, 5, 32, 48, {}},         {1280, 1280, 640, 640, {}},
          {640, 640, 640, 640, {}},   {300, 1000, 320, 320, {}},  {4000, 100, 256, 256, {}},
          {333, 517, 320, 320, bgr_mean_std_topleft()},           {1920, 1080, 416, 416, stretch()},
          {97, 61, 640, 384, bgr_mean_std_topleft()}};
}
// NV12 needs even sizes.
inline std::vector<FrameCase> nv12_cases() {
  return {{1920, 1080, 640, 640, {}}, {640, 480, 640, 640, {}}, {2, 2, 32, 32, {}},
          {640, 640, 640, 640, {}},   {100, 300, 320, 320, bgr_mean_std_topleft()},
          {1280, 720, 416, 416, stretch()}, {642, 478, 320, 256, {}}};
}

// LetterboxTransform::compute and letterbox.cpp's content size and ChannelMap, written again.
inline InputPlacement placement_for(int src_w, int src_h, int dst_w, int dst_h, const PreprocessSpec& spec) {
  InputPlacement p;
  p.dst_width = dst_w;
  p.dst_height = dst_h;
  float scale_x, scale_y;
  if (spec.resize == ResizeMode::kStretch) {
    scale_x = static_cast<float>(dst_w) / static_cast<float>(src_w);
    scale_y = static_cast<float>(dst_h) / static_cast<float>(src_h);
  } else {
    const double r = std::min(static_cast<double>(dst_w) / src_w, static_cast<double>(dst_h) / src_h);
    const int new_w = std::min(dst_w, static_cast<int>(std::lround(src_w * r)));
    const int new_h = std::min(dst_h, static_cast<int>(std::lround(src_h * r)));
    scale_x = static_cast<float>(new_w) / static_cast<float>(src_w);
    scale_y = static_cast<float>(new_h) / static_cast<float>(src_h);
    if (spec.pad == PadPlacement::kCenter) p.x0 = (dst_w - new_w) / 2, p.y0 = (dst_h - new_h) / 2;
  }
  p.content_width = static_cast<int>(std::lround(scale_x * static_cast<float>(src_w)));
  p.content_height = static_cast<int>(std::lround(scale_y * static_cast<float>(src_h)));
  for (int c = 0; c < 3; ++c) {
    const size_t k = static_cast<size_t>(c);
    p.src_channel[c] = spec.order == ChannelOrder::kRgb ? 2 - c : c;
    p.mul[c] = spec.scale / spec.std[k];
    p.add[c] = -spec.mean[k] / spec.std[k];
    p.pad[c] = static_cast<float>(spec.pad_value) * p.mul[c] + p.add[c];
  }
  return p;
}
inline InputPlacement placement_for(const FrameCase& f) { return placement_for(f.src_w, f.src_h, f.dst_w, f.dst_h, f.spec); }

// Smooth gradients plus noise (so that interpolation errors show), fixed seed per size.
inline std::vector<uint8_t> random_bytes(int w, int h, int channels, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> noise(-40, 40);
  std::vector<uint8_t> v(static_cast<size_t>(w) * h * channels);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c) {
        const int base = (x * 255 / std::max(1, w - 1) + y * 97 / std::max(1, h - 1) + c * 60) % 256;
        v[(static_cast<size_t>(y) * w + x) * channels + c] = static_cast<uint8_t>(std::clamp(base + noise(rng), 0, 255));
      }
  return v;
}

// The frame_kernels.cu arithmetic on the CPU: OpenCV INTER_LINEAR coordinates, float weights.
struct Tap {
  int i0, i1;
  float w1;
};
inline Tap tap(int d, double scale, int n) {
  const float f = static_cast<float>((d + 0.5) * scale - 0.5);
  int i = static_cast<int>(std::floor(f));
  float w = f - static_cast<float>(i);
  if (i < 0) i = 0, w = 0.f;
  if (i >= n - 1) i = n - 1, w = 0.f;
  return {i, i + 1 < n ? i + 1 : i, w};
}
inline float sample(const uint8_t* p, int64_t pitch, int step, const Tap& tx, const Tap& ty) {
  const uint8_t* r0 = p + ty.i0 * pitch;
  const uint8_t* r1 = p + ty.i1 * pitch;
  const float a = r0[tx.i0 * step] + tx.w1 * (static_cast<float>(r0[tx.i1 * step]) - r0[tx.i0 * step]);
  const float b = r1[tx.i0 * step] + tx.w1 * (static_cast<float>(r1[tx.i1 * step]) - r1[tx.i0 * step]);
  return std::floor(a + ty.w1 * (b - a) + 0.5f);
}

// Input planes (NCHW float, one image) from a packed BGR frame.
inline std::vector<float> reference_letterbox_bgr(const uint8_t* bgr, int w, int h, const InputPlacement& p) {
  const size_t plane = static_cast<size_t>(p.dst_width) * p.dst_height;
  std::vector<float> out(3 * plane);
  const double sx = static_cast<double>(w) / p.content_width, sy = static_cast<double>(h) / p.content_height;
  const bool unscaled = w == p.content_width && h == p.content_height;
  for (int y = 0; y < p.dst_height; ++y)
    for (int x = 0; x < p.dst_width; ++x) {
      const size_t at = static_cast<size_t>(y) * p.dst_width + x;
      const int cx = x - p.x0, cy = y - p.y0;
      if (cx < 0 || cy < 0 || cx >= p.content_width || cy >= p.content_height) {
        for (int c = 0; c < 3; ++c) out[c * plane + at] = p.pad[c];
        continue;
      }
      float px[3];
      for (int c = 0; c < 3; ++c)
        px[c] = unscaled ? bgr[(static_cast<size_t>(cy) * w + cx) * 3 + c]
                         : sample(bgr + c, 3 * static_cast<int64_t>(w), 3, tap(cx, sx, w), tap(cy, sy, h));
      for (int c = 0; c < 3; ++c) out[c * plane + at] = px[p.src_channel[c]] * p.mul[c] + p.add[c];
    }
  return out;
}

// NV12 (Y plane w x h, then interleaved UV at half resolution, packed) from the same generator.
inline std::vector<uint8_t> random_nv12(int w, int h, uint32_t seed) {
  std::vector<uint8_t> y = random_bytes(w, h, 1, seed), uv = random_bytes(w / 2, h / 2, 2, seed + 1);
  y.insert(y.end(), uv.begin(), uv.end());
  return y;
}

inline std::vector<float> reference_letterbox_nv12(const uint8_t* nv12, int w, int h, const InputPlacement& p) {
  constexpr float kCy = 1220542.f / 1048576.f, kCub = 2116026.f / 1048576.f, kCug = -409993.f / 1048576.f,
                  kCvg = -852492.f / 1048576.f, kCvr = 1673527.f / 1048576.f;
  const uint8_t* uvp = nv12 + static_cast<size_t>(w) * h;
  const size_t plane = static_cast<size_t>(p.dst_width) * p.dst_height;
  std::vector<float> out(3 * plane);
  const double cw = p.content_width, ch = p.content_height;
  const bool unscaled = w == p.content_width && h == p.content_height;
  for (int y = 0; y < p.dst_height; ++y)
    for (int x = 0; x < p.dst_width; ++x) {
      const size_t at = static_cast<size_t>(y) * p.dst_width + x;
      const int cx = x - p.x0, cy = y - p.y0;
      if (cx < 0 || cy < 0 || cx >= p.content_width || cy >= p.content_height) {
        for (int c = 0; c < 3; ++c) out[c * plane + at] = p.pad[c];
        continue;
      }
      float yv, u, v;
      if (unscaled) {
        yv = nv12[static_cast<size_t>(cy) * w + cx];
        const uint8_t* c = uvp + static_cast<size_t>(cy / 2) * w + 2 * (cx / 2);
        u = c[0], v = c[1];
      } else {
        yv = sample(nv12, w, 1, tap(cx, w / cw, w), tap(cy, h / ch, h));
        const Tap tx = tap(cx, (w / 2) / cw, w / 2), ty = tap(cy, (h / 2) / ch, h / 2);
        u = sample(uvp, w, 2, tx, ty);
        v = sample(uvp + 1, w, 2, tx, ty);
      }
      const float yy = std::max(yv - 16.f, 0.f) * kCy;
      u -= 128.f, v -= 128.f;
      const float r = std::clamp(yy + kCvr * v, 0.f, 255.f);
      const float g = std::clamp(yy + kCug * u + kCvg * v, 0.f, 255.f);
      const float b = std::clamp(yy + kCub * u, 0.f, 255.f);
      const float bgr[3] = {b, g, r};
      for (int c = 0; c < 3; ++c) out[c * plane + at] = bgr[p.src_channel[c]] * p.mul[c] + p.add[c];
    }
  return out;
}

// Largest |a - b| over the two, in uint8 levels of channel c's scale (|mul|).
inline float max_level_diff(const std::vector<float>& a, const std::vector<float>& b, const InputPlacement& p) {
  const size_t plane = a.size() / 3;
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / std::abs(p.mul[i / plane]));
  return worst;
}

// A synthetic YOLOv8 head [4+nc, anchors] (or transposed): boxes around a few objects (many
// overlapping candidates each), class scores with exact ties between classes and between anchors.
struct SyntheticHead {
  int64_t anchors;
  int nc;
  bool transposed;
  std::vector<float> data;
};
inline SyntheticHead synthetic_yolov8_head(int64_t anchors, int nc, bool transposed, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  SyntheticHead h{anchors, nc, transposed, std::vector<float>(static_cast<size_t>((4 + nc) * anchors))};
  auto at = [&](int64_t k, int64_t a) -> float& {
    return h.data[static_cast<size_t>(transposed ? a * (4 + nc) + k : k * anchors + a)];
  };
  const int objects = 12;
  for (int64_t a = 0; a < anchors; ++a) {
    const int o = static_cast<int>(a % objects);
    const float ox = 40.f + 45.f * o, oy = 30.f + 40.f * (o % 5);
    at(0, a) = ox + (u(rng) - 0.5f) * 12;
    at(1, a) = oy + (u(rng) - 0.5f) * 12;
    at(2, a) = 30 + u(rng) * 20;
    at(3, a) = 30 + u(rng) * 20;
    for (int c = 0; c < nc; ++c) at(4 + c, a) = std::round(u(rng) * u(rng) * 32) / 32;  // ties on a 1/32 grid
    if (a % 7 == 0) at(4 + (o % nc), a) = 0.75f;                                      // a strong class, tied often
  }
  return h;
}

// YoloV8Decoder::decode_plain on the synthetic head: the candidates in anchor order.
inline Detections reference_decode_yolov8(const SyntheticHead& h, float conf) {
  Detections out;
  auto at = [&](int64_t k, int64_t a) {
    return h.data[static_cast<size_t>(h.transposed ? a * (4 + h.nc) + k : k * h.anchors + a)];
  };
  for (int64_t a = 0; a < h.anchors; ++a) {
    int best = 0;
    for (int c = 1; c < h.nc; ++c)
      if (at(4 + c, a) > at(4 + best, a)) best = c;
    const float score = at(4 + best, a), cx = at(0, a), cy = at(1, a), w = at(2, a), hh = at(3, a);
    if (score >= conf) out.push_back(Detection{cx - 0.5f * w, cy - 0.5f * hh, cx + 0.5f * w, cy + 0.5f * hh, score, best});
  }
  return out;
}

// A synthetic objectness head [anchors, 5+nc]: YOLOv5 (boxes in pixels around a dozen objects)
// or, with strides, YOLOX (offsets in 0..1 and log sizes on the grids of a 320x320 input, so
// neighbouring cells' boxes overlap); objectness and class scores on a 1/32 grid (ties).
struct SyntheticRowsHead {
  int64_t anchors;
  int nc;
  std::vector<int> strides;  // empty: YOLOv5
  int input = 320;
  std::vector<float> data;
};
inline SyntheticRowsHead synthetic_rows_head(int64_t anchors, int nc, std::vector<int> strides, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  SyntheticRowsHead h{anchors, nc, std::move(strides), 320, std::vector<float>(static_cast<size_t>((5 + nc) * anchors))};
  for (int64_t a = 0; a < anchors; ++a) {
    float* p = h.data.data() + a * (5 + nc);
    const int o = static_cast<int>(a % 12);
    if (h.strides.empty()) {
      p[0] = 40.f + 45.f * o + (u(rng) - 0.5f) * 12, p[1] = 30.f + 40.f * (o % 5) + (u(rng) - 0.5f) * 12;
      p[2] = 30 + u(rng) * 20, p[3] = 30 + u(rng) * 20;
    } else {
      p[0] = u(rng), p[1] = u(rng), p[2] = std::log(1.f + u(rng) * 3), p[3] = std::log(1.f + u(rng) * 3);
    }
    p[4] = std::round((0.2f + 0.8f * u(rng)) * 32) / 32;
    for (int c = 0; c < nc; ++c) p[5 + c] = std::round(u(rng) * 32) / 32;
    if (a % 5 == 0) p[5 + o % nc] = 1.f;
  }
  return h;
}

// YoloV5Decoder / YoloXDecoder written plainly: the candidates in anchor order.
inline Detections reference_decode_rows(const SyntheticRowsHead& h, float conf) {
  Detections out;
  int64_t a = 0;
  auto one = [&](float cx, float cy, float w, float hh, const float* p) {
    int best = 0;
    for (int c = 1; c < h.nc; ++c)
      if (p[5 + c] > p[5 + best]) best = c;
    const float score = p[4] * p[5 + best];
    if (p[4] >= conf && score >= conf)
      out.push_back(Detection{cx - 0.5f * w, cy - 0.5f * hh, cx + 0.5f * w, cy + 0.5f * hh, score, best});
  };
  if (h.strides.empty()) {
    for (; a < h.anchors; ++a) {
      const float* p = h.data.data() + a * (5 + h.nc);
      one(p[0], p[1], p[2], p[3], p);
    }
    return out;
  }
  for (int s : h.strides) {
    const int g = (h.input + s - 1) / s;
    const float stride = static_cast<float>(s);
    for (int gy = 0; gy < g; ++gy)
      for (int gx = 0; gx < g; ++gx, ++a) {
        const float* p = h.data.data() + a * (5 + h.nc);
        one((p[0] + static_cast<float>(gx)) * stride, (p[1] + static_cast<float>(gy)) * stride, std::exp(p[2]) * stride,
            std::exp(p[3]) * stride, p);
      }
  }
  return out;
}

// Boxes in clusters (nms_test.cpp's generator): many overlaps, exact duplicates, snapped
// coordinates and quantised scores so that IoU and score ties occur.
inline Detections random_boxes(std::mt19937& rng, int n, int classes, bool snap, bool tie_scores) {
  std::uniform_real_distribution<float> u(0.f, 1.f);
  const int clusters = 1 + static_cast<int>(u(rng) * 30);
  std::vector<Detection> centres;
  for (int k = 0; k < clusters; ++k) {
    float w = 10 + u(rng) * 150, h = 10 + u(rng) * 150, x = u(rng) * 600, y = u(rng) * 600;
    centres.push_back({x, y, x + w, y + h, 0, static_cast<int>(u(rng) * classes)});
  }
  Detections d;
  for (int i = 0; i < n; ++i) {
    Detection c = centres[static_cast<size_t>(u(rng) * clusters) % centres.size()];
    const float jitter = 0.25f * (c.x2 - c.x1);
    auto j = [&] { return (u(rng) - 0.5f) * jitter; };
    Detection b{c.x1 + j(), c.y1 + j(), c.x2 + j(), c.y2 + j(), u(rng), c.class_id};
    if (u(rng) < 0.2f) b.class_id = static_cast<int>(u(rng) * classes);
    if (u(rng) < 0.05f) b = c, b.score = u(rng);
    if (snap) b.x1 = std::round(b.x1), b.y1 = std::round(b.y1), b.x2 = std::round(b.x2), b.y2 = std::round(b.y2);
    if (tie_scores) b.score = std::round(b.score * 16) / 16;
    d.push_back(b);
  }
  return d;
}

}  // namespace sd::test::gpu_frames
