#include "engine/native/cuda/cudnn_conv_desc.h"

#include <climits>
#include <cmath>
#include <cstdio>

namespace sd::native::cuda {
namespace {

std::array<int, 4> strides_of(const std::array<int, 4>& d, bool nhwc) {
  const int c = d[1], h = d[2], w = d[3];
  if (nhwc) return {h * w * c, 1, w * c, c};
  return {c * h * w, h * w, w, 1};
}

}  // namespace

std::vector<float> oihw_to_ohwi(std::span<const float> w, const std::array<int, 4>& d) {
  const size_t k = d[0], c = d[1], h = d[2], x = d[3];
  std::vector<float> out(w.size());
  for (size_t o = 0; o < k; ++o)
    for (size_t i = 0; i < c; ++i)
      for (size_t y = 0; y < h; ++y)
        for (size_t z = 0; z < x; ++z) out[((o * h + y) * x + z) * c + i] = w[((o * c + i) * h + y) * x + z];
  return out;
}

int cudnn_output_size(int in, int pad, int kernel, int stride, int dilation) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

Result<CudnnConvShape> cudnn_conv_shape(const ops::ConvGeometry& g, bool src_nhwc, bool dst_nhwc) {
  if (g.pt != g.pb || g.pl != g.pr)
    return fail(ErrorCode::kUnsupported, "asymmetric padding (top " + std::to_string(g.pt) + " bottom " + std::to_string(g.pb) +
                                             ", left " + std::to_string(g.pl) + " right " + std::to_string(g.pr) + ")");
  for (int64_t v : {g.n * g.c * g.h * g.w, g.n * g.oc * g.oh * g.ow, g.oc * g.c * g.kh * g.kw})
    if (v > INT_MAX || v <= 0) return fail(ErrorCode::kUnsupported, "a tensor of " + std::to_string(v) + " elements (int range)");
  if (g.group <= 0 || g.c % g.group || g.oc % g.group) return fail(ErrorCode::kUnsupported, "channels not divisible by the groups");
  CudnnConvShape s;
  s.x_dims = {int(g.n), int(g.c), int(g.h), int(g.w)};
  s.y_dims = {int(g.n), int(g.oc), int(g.oh), int(g.ow)};
  s.w_dims = {int(g.oc), int(g.c / g.group), int(g.kh), int(g.kw)};
  s.x_strides = strides_of(s.x_dims, src_nhwc);
  s.y_strides = strides_of(s.y_dims, dst_nhwc);
  s.pad_h = int(g.pt), s.pad_w = int(g.pl), s.stride_h = int(g.sh), s.stride_w = int(g.sw);
  s.dilation_h = int(g.dh), s.dilation_w = int(g.dw), s.groups = int(g.group);
  const int oh = cudnn_output_size(s.x_dims[2], s.pad_h, s.w_dims[2], s.stride_h, s.dilation_h);
  const int ow = cudnn_output_size(s.x_dims[3], s.pad_w, s.w_dims[3], s.stride_w, s.dilation_w);
  if (oh != g.oh || ow != g.ow)
    return fail(ErrorCode::kUnsupported, "output " + std::to_string(g.oh) + "x" + std::to_string(g.ow) + " where cuDNN computes " +
                                             std::to_string(oh) + "x" + std::to_string(ow));
  return s;
}

std::string cudnn_probe_disagreement(std::span<const float> cudnn, std::span<const float> direct, float tolerance) {
  if (cudnn.size() != direct.size())
    return "sizes differ (" + std::to_string(cudnn.size()) + " vs " + std::to_string(direct.size()) + ")";
  float scale = 1.f;
  for (float v : direct)
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  const float limit = tolerance * scale;
  for (size_t i = 0; i < cudnn.size(); ++i) {
    if (std::isnan(cudnn[i]) != std::isnan(direct[i])) return "NaN at element " + std::to_string(i);
    if (std::isnan(direct[i])) continue;
    const float d = std::fabs(cudnn[i] - direct[i]);
    if (!(d <= limit)) {
      char text[128];
      std::snprintf(text, sizeof text, "differs by %.3g at element %zu (tolerance %.3g)", d, i, limit);
      return text;
    }
  }
  return {};
}

}  // namespace sd::native::cuda
