// The CUDA backend's direct convolution (conv.cu): one thread per output element, float32 or
// fp16 storage (T = float or __half; float arithmetic and accumulation either way), any geometry, either layout on either side, with the fused post ops. It is the naive reference the
// fast path (cuDNN, cudnn_conv.cpp) is checked against at load and in the tests, and runs whatever
// that path does not take. The epilogue is the fast path's tail: bias and post ops after cuDNN.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace sd::native::cuda {

inline constexpr int kMaxPostOps = 8;

struct ConvParams {
  int64_t n, c, h, w, oc, kh, kw, oh, ow, group, sh, sw, dh, dw, pt, pl;
  bool src_nhwc = false, dst_nhwc = false;
  int post_count = 0;
  int post_kind[kMaxPostOps] = {};  // ops::PostKind's values: relu, leaky relu, silu, sigmoid, hardswish, clip, sum
  float post_alpha[kMaxPostOps] = {}, post_beta[kMaxPostOps] = {};
};

// x: [n, c, h, w] in the source layout; w: [oc, c / group, kh, kw]; bias: [oc] or nullptr; sum:
// the residual operand in the destination layout, or nullptr; y: [n, oc, oh, ow] in the
// destination layout. Returns the launch's cudaError_t as an int.
template <class T>
int launch_conv_direct(const ConvParams& p, const T* x, const T* w, const T* bias, const T* sum, T* y, void* stream);

// y (destination layout) += bias, then the post ops, in place: after cuDNN's convolution. A
// no-op without bias and post ops.
template <class T>
int launch_conv_epilogue(const ConvParams& p, const T* bias, const T* sum, T* y, void* stream);

}  // namespace sd::native::cuda
