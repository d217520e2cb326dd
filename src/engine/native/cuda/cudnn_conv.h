// Conv/FusedConv through cuDNN (fp32 with FMA math, or fp16 tensors and filter with float32
// accumulation on tensor cores under --precision fp16; NCHW or NHWC on either side): descriptors made once per
// node when the plan is made, the algorithm from cuDNN's _v7 heuristics (the first that runs with
// at most kCudnnMaxWorkspace of workspace, taken from the session's scratch), then bias and the
// post ops in our epilogue kernel (conv.cu). At creation the node's plan is probed: random input,
// weights, bias and residual through cuDNN + epilogue and through the direct kernel, compared on
// the host; a plan that fails or disagrees is refused with a one-line reason, and conv_ops.cpp
// then runs the node on the direct kernel and says why.
#pragma once

#include <memory>

#include "core/error.h"
#include "engine/native/cuda/conv.h"
#include "engine/native/op_registry.h"

namespace sd::native::cuda {

inline constexpr size_t kCudnnMaxWorkspace = size_t{64} << 20;

// p: the node's direct-kernel parameters (conv_ops.cpp); bias / sum: whether inputs 2 / 3 are
// given. Errors: why cuDNN does not run this node (kUnsupported: no cuDNN, a geometry it does not
// take; kInternal: a cuDNN or CUDA call failed; the probe disagreed).
Result<std::unique_ptr<Kernel>> create_cudnn_conv(const OpContext& ctx, const ConvParams& p, bool bias, bool sum);

}  // namespace sd::native::cuda
