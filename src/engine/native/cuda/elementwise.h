// Elementwise kernels of the CUDA backend (elementwise.cu), behind a plain C++ interface so that
// the host side (elementwise_ops.cpp) is compiled by the C++ compiler. Any size; the element type T
// is float or __half (--precision fp16: fp16 storage, float arithmetic), instantiated in
// elementwise.cu for both; each launcher returns the cudaError_t of the launch as an int (0: queued).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace sd::native::cuda {

enum class UnaryOp : int { kRelu, kLeakyRelu, kSigmoid, kTanh, kHardSigmoid, kHardSwish, kNeg, kAbs, kExp, kClip, kIdentity };
// y[i] = op(x[i]); alpha/beta: LeakyRelu's slope, HardSigmoid's alpha and beta, Clip's bounds.
template <class T>
int launch_unary(UnaryOp op, const T* x, T* y, int64_t n, float alpha, float beta, void* stream);

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
template <class T>
int launch_binary(BinaryOp op, const T* a, const T* b, T* y, int64_t n, const Broadcast& bc, void* stream);

// Conversions between float32 and fp16 storage (round to nearest even): the device side of the
// CUDA backend's converting copies.
int launch_float_to_half(const float* x, __half* y, int64_t n, void* stream);
int launch_half_to_float(const __half* x, float* y, int64_t n, void* stream);

}  // namespace sd::native::cuda
