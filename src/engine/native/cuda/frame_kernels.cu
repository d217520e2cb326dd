// Letterbox kernels (frame_kernels.h): one thread per input pixel, border included, so the whole
// input is written in one launch and nothing needs clearing first.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "engine/native/cuda/frame_kernels.h"
#include "engine/native/cuda/launch.cuh"

namespace sd::native::cuda {
namespace {

// One axis of OpenCV's INTER_LINEAR: source index and weight of the next sample for output
// index d (cv::resize: fx = (d + 0.5) * scale - 0.5 in double, floored, clamped at the edges).
struct Tap {
  int i0, i1;
  float w1;
};
__device__ __forceinline__ Tap tap(int d, double scale, int n) {
  const float f = static_cast<float>((d + 0.5) * scale - 0.5);
  int i = static_cast<int>(floorf(f));
  float w = f - static_cast<float>(i);
  if (i < 0) i = 0, w = 0.f;
  if (i >= n - 1) i = n - 1, w = 0.f;
  return {i, i + 1 < n ? i + 1 : i, w};
}

// Bilinear sample of a byte plane (element step `step` bytes, row pitch `pitch`), rounded to
// the nearest integer as cv::resize's uint8 result.
__device__ __forceinline__ float sample(const uint8_t* p, int64_t pitch, int step, const Tap& tx, const Tap& ty) {
  const uint8_t* r0 = p + ty.i0 * pitch;
  const uint8_t* r1 = p + ty.i1 * pitch;
  const float a = r0[tx.i0 * step] + tx.w1 * (static_cast<float>(r0[tx.i1 * step]) - r0[tx.i0 * step]);
  const float b = r1[tx.i0 * step] + tx.w1 * (static_cast<float>(r1[tx.i1 * step]) - r1[tx.i0 * step]);
  return floorf(a + ty.w1 * (b - a) + 0.5f);
}

// The three network values of pixel (x, y) of the input.
__device__ __forceinline__ void store(const InputPlacement& p, InputLayout layout, void* dst, int x, int y, const float v[3]) {
  const int64_t plane = static_cast<int64_t>(p.dst_width) * p.dst_height;
  const int64_t at = static_cast<int64_t>(y) * p.dst_width + x;
  if (layout == InputLayout::kNchwF32) {
    float* o = static_cast<float*>(dst);
    for (int c = 0; c < 3; ++c) o[c * plane + at] = v[c];
  } else if (layout == InputLayout::kNchwF16) {
    __half* o = static_cast<__half*>(dst);
    for (int c = 0; c < 3; ++c) o[c * plane + at] = __float2half_rn(v[c]);
  } else {
    __half* o = static_cast<__half*>(dst) + at * 3;
    for (int c = 0; c < 3; ++c) o[c] = __float2half_rn(v[c]);
  }
}

// True (and the content coordinates) when input pixel i lies on the content; otherwise writes the border.
__device__ __forceinline__ bool content_pixel(const InputPlacement& p, InputLayout layout, void* dst, int64_t i, int& x,
                                              int& y, int& cx, int& cy) {
  x = static_cast<int>(i % p.dst_width);
  y = static_cast<int>(i / p.dst_width);
  cx = x - p.x0;
  cy = y - p.y0;
  if (cx >= 0 && cy >= 0 && cx < p.content_width && cy < p.content_height) return true;
  const float v[3] = {p.pad[0], p.pad[1], p.pad[2]};
  store(p, layout, dst, x, y, v);
  return false;
}

__global__ void letterbox_bgr_kernel(BgrImage src, InputPlacement p, InputLayout layout, void* dst, double sx, double sy) {
  const int64_t n = static_cast<int64_t>(p.dst_width) * p.dst_height;
  SD_GRID_LOOP(i, n) {
    int x, y, cx, cy;
    if (!content_pixel(p, layout, dst, i, x, y, cx, cy)) continue;
    float bgr[3];
    if (src.width == p.content_width && src.height == p.content_height) {
      const uint8_t* px = src.data + cy * src.pitch + 3 * cx;
      for (int c = 0; c < 3; ++c) bgr[c] = px[c];
    } else {
      const Tap tx = tap(cx, sx, src.width), ty = tap(cy, sy, src.height);
      for (int c = 0; c < 3; ++c) bgr[c] = sample(src.data + c, src.pitch, 3, tx, ty);
    }
    float v[3];
    for (int c = 0; c < 3; ++c) v[c] = bgr[p.src_channel[c]] * p.mul[c] + p.add[c];
    store(p, layout, dst, x, y, v);
  }
}

// BT.601 limited range, OpenCV's fixed-point coefficients / 2^20 (as letterbox.cpp's yuv_row).
constexpr float kCy = 1220542.f / 1048576.f;
constexpr float kCub = 2116026.f / 1048576.f;
constexpr float kCug = -409993.f / 1048576.f;
constexpr float kCvg = -852492.f / 1048576.f;
constexpr float kCvr = 1673527.f / 1048576.f;

__device__ __forceinline__ float clamp255(float v) { return fminf(fmaxf(v, 0.f), 255.f); }

__global__ void letterbox_nv12_kernel(Nv12Image src, InputPlacement p, InputLayout layout, void* dst, double sx,
                                      double sy, double csx, double csy) {
  const int64_t n = static_cast<int64_t>(p.dst_width) * p.dst_height;
  const bool unscaled = src.width == p.content_width && src.height == p.content_height;
  SD_GRID_LOOP(i, n) {
    int x, y, cx, cy;
    if (!content_pixel(p, layout, dst, i, x, y, cx, cy)) continue;
    float yv, u, v;
    if (unscaled) {
      yv = src.y[cy * src.y_pitch + cx];
      const uint8_t* c = src.uv + (cy >> 1) * src.uv_pitch + 2 * (cx >> 1);
      u = c[0], v = c[1];
    } else {
      yv = sample(src.y, src.y_pitch, 1, tap(cx, sx, src.width), tap(cy, sy, src.height));
      const Tap tx = tap(cx, csx, src.width / 2), ty = tap(cy, csy, src.height / 2);
      u = sample(src.uv, src.uv_pitch, 2, tx, ty);
      v = sample(src.uv + 1, src.uv_pitch, 2, tx, ty);
    }
    // The same operations in the same order as yuv_row (the compilers may fuse some into FMAs
    // on either side: a few float ulps apart, inside the tests' tolerance).
    const float yy = __fmul_rn(fmaxf(yv - 16.f, 0.f), kCy);
    u -= 128.f, v -= 128.f;
    const float r = clamp255(__fadd_rn(yy, __fmul_rn(kCvr, v)));
    const float g = clamp255(__fadd_rn(__fadd_rn(yy, __fmul_rn(kCug, u)), __fmul_rn(kCvg, v)));
    const float b = clamp255(__fadd_rn(yy, __fmul_rn(kCub, u)));
    const float bgr[3] = {b, g, r};
    float out[3];
    for (int c = 0; c < 3; ++c) out[c] = bgr[p.src_channel[c]] * p.mul[c] + p.add[c];
    store(p, layout, dst, x, y, out);
  }
}

}  // namespace

int launch_letterbox_bgr(const BgrImage& src, const InputPlacement& p, InputLayout layout, void* dst, void* stream) {
  const int64_t n = static_cast<int64_t>(p.dst_width) * p.dst_height;
  if (n == 0) return cudaSuccess;
  // cv::resize's scale: source over destination size, in double.
  const double sx = p.content_width > 0 ? static_cast<double>(src.width) / p.content_width : 1.0;
  const double sy = p.content_height > 0 ? static_cast<double>(src.height) / p.content_height : 1.0;
  letterbox_bgr_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(src, p, layout, dst, sx, sy);
  return cudaGetLastError();
}

int launch_letterbox_nv12(const Nv12Image& src, const InputPlacement& p, InputLayout layout, void* dst, void* stream) {
  const int64_t n = static_cast<int64_t>(p.dst_width) * p.dst_height;
  if (n == 0) return cudaSuccess;
  const double cw = p.content_width > 0 ? p.content_width : 1, ch = p.content_height > 0 ? p.content_height : 1;
  letterbox_nv12_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      src, p, layout, dst, src.width / cw, src.height / ch, (src.width / 2) / cw, (src.height / 2) / ch);
  return cudaGetLastError();
}

}  // namespace sd::native::cuda
