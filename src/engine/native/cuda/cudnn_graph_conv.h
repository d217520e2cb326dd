// Conv/FusedConv through cuDNN's backend (graph) API, the second cuDNN engine beside the legacy
// one (cudnn_conv.cpp): per node one operation graph, convolution forward -> add the bias ->
// the post ops as pointwise operations (cudnn_graph_rules.h), which cuDNN's runtime fusion engines
// run as one kernel instead of the legacy path's convolution then our epilogue kernel (conv.cu).
// The tensors fp16 (--precision fp16) or float32, computed in float32, in the node's layouts.
// The engine: cuDNN's heuristics (mode A, then the fallback list), the first engine config whose
// execution plan finalizes with at most kCudnnMaxWorkspace of workspace. The plan is made once,
// when the node's kernel is; each run builds a variant pack with that run's pointers and executes
// the plan on the session's stream (recorded into CUDA graphs like any launch). At creation the
// plan is probed against the direct kernel as the legacy plans are.
#pragma once

#include <memory>
#include <span>

#include "core/error.h"
#include "engine/native/cuda/conv.h"
#include "engine/native/cuda/cudnn_conv_desc.h"
#include "engine/native/cuda/cudnn_graph_rules.h"
#include "engine/native/cuda/cudnn_library.h"
#include "engine/native/op_registry.h"

namespace sd::native::cuda {

// p: the node's direct-kernel parameters; shape: cuDNN's view of them (cudnn_conv_shape);
// weights_ohwi: the node's constant weights in cuDNN's NHWC filter layout (the kernel uploads its
// own copy) or empty for the weights input as it comes (ONNX's layout); bias / sum: whether
// inputs 2 / 3 are given; half: fp16 tensors. Errors: kUnsupported (no backend API in this cuDNN,
// a post op without a pointwise form, no engine config that finalizes within the workspace cap:
// the ones tried and why), kInternal (a cuDNN or CUDA call failed, the probe disagreed).
Result<std::unique_ptr<Kernel>> create_cudnn_graph_conv_kernel(const ConvParams& p, const CudnnConvShape& shape,
                                                               std::span<const float> weights_ohwi, bool bias, bool sum, bool half);

// The node's operations (convolution forward and the steps' pointwise operations) made and
// finalized, without the operation graph, which needs a handle and so a GPU: the count of
// operations, or the first cuDNN call that refused (naming the attribute). For the host tests,
// where cuDNN loads without a GPU.
Result<size_t> cudnn_graph_operations(const CudnnLibrary& lib, const CudnnConvShape& shape, bool filter_nhwc, bool half,
                                      const std::vector<CudnnPointwiseStep>& steps);

// From the node: the filter in the input's layout (NHWC) where the input is NHWC and the weights
// are a float32 constant, as the legacy engine's first choice; else the weights input as it comes.
Result<std::unique_ptr<Kernel>> create_cudnn_graph_conv(const OpContext& ctx, const ConvParams& p, bool bias, bool sum);

}  // namespace sd::native::cuda
