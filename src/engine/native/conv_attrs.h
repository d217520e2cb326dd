// What a Conv / FusedConv or pooling node asks for, read the same by every backend: the window
// geometry and a convolution's fused post ops.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "engine/native/op_registry.h"

namespace sd::native::ops {

// A 2-D convolution's geometry from its node: input [n, c, h, w] (logical), weights
// [oc, c / group, kh, kw], strides, dilations, pads (auto_pad resolved), output size.
struct ConvGeometry {
  int64_t n, c, h, w, oc, kh, kw, oh, ow, group;
  int64_t sh, sw, dh, dw, pt, pl, pb, pr;
};
Result<ConvGeometry> conv_geometry(const OpContext& ctx);

// On an Int8Conv (passes::fuse_qdq_convolutions), 1: computed in float32 between its int8 tensors
// (cpu/int8_conv_in_float.h), where the processor's int8 kernels would not compute it exactly.
inline constexpr const char* kInt8InFloat = "in_float";

// A FusedConv's post op (passes::fuse_conv_activations names them), parsed once at kernel creation.
enum class PostKind { kRelu, kLeakyRelu, kSilu, kSigmoid, kHardSwish, kClip, kSum };

struct PostOp {
  PostKind kind;
  float alpha = 0, beta = 0;  // LeakyRelu's slope, Clip's bounds
};

Result<PostKind> post_kind(const std::string& op, const OpContext& ctx);
// The node's post ops in order ("post_ops", "post_op_alpha", "post_op_beta"); a sum needs the 4th
// input, of the output's shape.
Result<std::vector<PostOp>> post_ops(const OpContext& ctx);

// Pooling (MaxPool, AveragePool, their Global forms): 2-D windows, no dilation, pads and
// ceil_mode resolved.
struct PoolGeometry {
  int64_t n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr, oh, ow;
  bool max = true, include_pad = false;
};
Result<PoolGeometry> pool_geometry(const OpContext& ctx);

}  // namespace sd::native::ops
