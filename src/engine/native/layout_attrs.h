// Attributes the planner sets on its copy of a convolution or pooling node to tell the kernel,
// whatever its backend, the physical layouts of its 4-D source and destination.
#pragma once

namespace sd::native {

inline constexpr const char* kSrcNhwc = "_src_nhwc";  // 1: the 4-D input is stored N,H,W,C
inline constexpr const char* kDstNhwc = "_dst_nhwc";  // 1: write the 4-D output as N,H,W,C
// The session's thread budget, on a convolution: for kernels that choose their implementation by
// timing the candidates on the node's shape while planning (cpu/dnnl_conv.cpp).
inline constexpr const char* kPlanThreads = "_threads";

}  // namespace sd::native
