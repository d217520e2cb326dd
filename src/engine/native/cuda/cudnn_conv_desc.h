// The host-side logic of the cuDNN convolution path, without cuDNN or a GPU (so the host tests
// check it): how an ONNX Conv's geometry (conv_attrs.h) maps onto cuDNN's 4-d descriptors, and
// whether a cuDNN plan's probe output agrees with the direct kernel's.
#pragma once

#include <array>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/native/conv_attrs.h"

namespace sd::native::cuda {

// What cudnnSetTensor4dDescriptorEx / cudnnSetFilter4dDescriptor / cudnnSetConvolution2dDescriptor
// and cudnnSetConvolutionGroupCount take. Dims are {n, c, h, w} whatever the layout; strides in
// elements give the layout (NCHW or NHWC, each side its own). The filter is ONNX's
// [oc, c / group, kh, kw] (cuDNN's NCHW filter format).
struct CudnnConvShape {
  std::array<int, 4> x_dims, x_strides, y_dims, y_strides, w_dims;
  int pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w, groups;
};

// Errors (kUnsupported, one line saying why the node keeps the direct kernel): asymmetric padding
// (cuDNN pads both sides alike), sizes beyond int, an output size other than cuDNN's formula gives.
Result<CudnnConvShape> cudnn_conv_shape(const ops::ConvGeometry& g, bool src_nhwc, bool dst_nhwc);

// ONNX's [k, c, kh, kw] weights as cuDNN's NHWC filter format wants them, [k, kh, kw, c]: the
// filter's layout matched to an NHWC input, the combination cuDNN's algorithms cover best.
std::vector<float> oihw_to_ohwi(std::span<const float> w, const std::array<int, 4>& dims);

// cuDNN's output size for one spatial axis, (in + 2 pad - dilation (k - 1) - 1) / stride + 1
// (cudnnGetConvolution2dForwardOutputDim's formula).
int cudnn_output_size(int in, int pad, int kernel, int stride, int dilation);

// The probe's verdict: "" when the cuDNN output agrees with the direct kernel's elementwise
// within tolerance * max(1, max |direct|), else a one-line reason ("differs by 0.31 at element 17
// (tolerance 0.002)", "NaN at element 3", "sizes differ").
std::string cudnn_probe_disagreement(std::span<const float> cudnn, std::span<const float> direct, float tolerance);

// The fp32 probe's tolerance: cuDNN and the direct kernel sum in different orders (FMA math only,
// no TF32), so they differ by rounding alone.
inline constexpr float kCudnnFp32ProbeTolerance = 1e-4f;
// The fp16 probe's (--precision fp16: fp16 tensors and filter, float32 accumulation on tensor
// cores): both paths read the same fp16 values and accumulate in float32, but cuDNN rounds its
// result to fp16 before our epilogue adds the bias and applies the post ops (the direct kernel
// rounds once, at the end), and the summation orders differ: a few fp16 ulps (2^-11 relative
// each) of the largest output. 5e-3 of it is about 10 ulps.
inline constexpr float kCudnnFp16ProbeTolerance = 5e-3f;

}  // namespace sd::native::cuda
