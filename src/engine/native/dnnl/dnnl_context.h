// The one oneDNN CPU engine of the process, and helpers shared by the oneDNN-backed ops.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace sd::native::dnnl_ops {

dnnl::engine& cpu_engine();

// Attribute names the executor sets on a node's copy to tell a kernel its physical layouts.
inline constexpr const char* kSrcNhwc = "_src_nhwc";  // 1: the 4-D input is stored N,H,W,C
inline constexpr const char* kDstNhwc = "_dst_nhwc";  // 1: write the 4-D output as N,H,W,C

}  // namespace sd::native::dnnl_ops
