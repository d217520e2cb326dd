// Elementwise kernels of the CUDA backend (elementwise.cu), behind a plain C++ interface so that
// the host side (elementwise_ops.cpp) is compiled by the C++ compiler. float32, any size; each
// launcher returns the cudaError_t of the launch as an int (0: queued).
#pragma once

#include <cstdint>

namespace sd::native::cuda {

enum class UnaryOp : int { kRelu, kLeakyRelu, kSigmoid, kTanh, kHardSigmoid, kHardSwish, kNeg, kAbs, kExp, kClip, kIdentity };
// y[i] = op(x[i]); alpha/beta: LeakyRelu's slope, HardSigmoid's alpha and beta, Clip's bounds.
int launch_unary(UnaryOp op, const float* x, float* y, int64_t n, float alpha, float beta, void* stream);

enum class BinaryOp : int { kAdd, kSub, kMul, kDiv, kMax, kMin };
inline constexpr int kMaxBroadcastRank = 6;
// Numpy broadcasting: the output's dims, and each operand's element strides per output dim (0
// along a broadcast dim), right-aligned to `rank` dims.
struct Broadcast {
  int rank = 0;
  int64_t dims[kMaxBroadcastRank] = {};
  int64_t a_strides[kMaxBroadcastRank] = {};
  int64_t b_strides[kMaxBroadcastRank] = {};
};
// y = a op b over n = prod(dims) elements. Same-shape and scalar operands take a flat path.
int launch_binary(BinaryOp op, const float* a, const float* b, float* y, int64_t n, const Broadcast& bc, void* stream);

}  // namespace sd::native::cuda
