// Attributes the planner sets on its copy of a convolution or pooling node to tell the kernel,
// whatever its backend, the physical layouts of its 4-D source and destination.
#pragma once

namespace sd::native {

inline constexpr const char* kSrcNhwc = "_src_nhwc";  // 1: the 4-D input is stored N,H,W,C
inline constexpr const char* kDstNhwc = "_dst_nhwc";  // 1: write the 4-D output as N,H,W,C
// The session's thread budget, on a convolution: for kernels that choose their implementation by
// timing the candidates on the node's shape while planning (cpu/dnnl_conv.cpp).
inline constexpr const char* kPlanThreads = "_threads";
// A channels-last destination inside a wider tensor (a Concat's output the planner placed it in,
// exec/plan_concat.cpp): elements from one pixel (row of the last axis) to the next; 0 or the
// output's own last dimension: dense. Set only in CPU-only plans, on the CPU kernels that take it:
// Int8Table, Int8AddTables, a per-tensor QuantizeLinear, a nearest Resize, and a float
// convolution that our Winograd runs.
inline constexpr const char* kDstPixelStride = "_dst_pixel_stride";
// Its channels-last source lies inside a wider tensor (a Split's input the planner left unsplit,
// exec/plan_concat.cpp): elements from one pixel to the next. On an Int8Table, and on a float
// convolution that our Winograd runs.
inline constexpr const char* kSrcPixelStride = "_src_pixel_stride";
// The same for a convolution's residual operand (FusedConv's sum input): our Winograd only.
inline constexpr const char* kSumPixelStride = "_sum_pixel_stride";
// On a Concat: per input, elements from one pixel to the next where that input lies inside a
// wider tensor (a Split's part, as above); 0: dense.
inline constexpr const char* kSrcPixelStrides = "_src_pixel_strides";
// On a layout conversion to NCHW (a Transpose [N,H,W,C] -> [N,C,H,W] of 4-byte elements): elements
// from one channel's plane to the next, inside a Concat's output along its last axis (YOLOv8's
// head, exec/plan_concat.cpp); 0 or H*W: dense.
inline constexpr const char* kDstRowStride = "_dst_row_stride";
// On a 1x1 convolution: its channels-last float32 source is a Concat along the channels that no
// step wrote (exec/plan_concat.cpp, Planner::concat_read_in_parts), read from its inputs: per part,
// its channels and its pixel stride in elements, in order. Part 0 is input 0, part k input 3 + k
// (input 3: the residual operand or none). Our 1x1 kernel only (cpu/pointwise_conv.h): float32, or
// its bf16 variant on bf16 parts.
inline constexpr const char* kSrcParts = "_src_parts";
// On a Concat: per input, 1 where its producer already wrote it in place (nothing to copy).
inline constexpr const char* kInPlaceInputs = "_in_place_inputs";

}  // namespace sd::native
