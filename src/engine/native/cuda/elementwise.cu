// Elementwise kernels: grid-stride loops, one element per thread per step. These ops are
// memory-bound (8 to 12 bytes moved per element for a handful of flops); a fused chain after a
// convolution is the convolution's business (cuDNN's runtime fusion), not these kernels'.
#include <cuda_runtime.h>

#include "engine/native/cuda/elementwise.h"
#include "engine/native/cuda/launch.cuh"

namespace sd::native::cuda {
namespace {

__device__ __forceinline__ float apply(UnaryOp op, float x, float alpha, float beta) {
  switch (op) {
    case UnaryOp::kRelu: return x > 0.f ? x : 0.f;
    case UnaryOp::kLeakyRelu: return x >= 0.f ? x : alpha * x;
    case UnaryOp::kSigmoid: return 1.f / (1.f + expf(-x));
    case UnaryOp::kTanh: return tanhf(x);
    case UnaryOp::kHardSigmoid: return fminf(1.f, fmaxf(0.f, alpha * x + beta));
    case UnaryOp::kHardSwish: return x * fminf(1.f, fmaxf(0.f, x / 6.f + 0.5f));
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kAbs: return fabsf(x);
    case UnaryOp::kExp: return expf(x);
    case UnaryOp::kClip: return fminf(beta, fmaxf(alpha, x));
    case UnaryOp::kIdentity: return x;
  }
  return x;
}

__device__ __forceinline__ float apply(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
    case BinaryOp::kMax: return fmaxf(a, b);
    case BinaryOp::kMin: return fminf(a, b);
  }
  return a;
}

template <class T>
__global__ void unary_kernel(UnaryOp op, const T* __restrict__ x, T* __restrict__ y, int64_t n, float alpha, float beta) {
  SD_GRID_LOOP(i, n)
    store(y + i, apply(op, load(x[i]), alpha, beta));
}

// a and b both of the output's shape (sa = sb = 1), or one of them a scalar (its step 0).
template <class T>
__global__ void binary_flat_kernel(BinaryOp op, const T* __restrict__ a, int64_t sa, const T* __restrict__ b, int64_t sb,
                                   T* __restrict__ y, int64_t n) {
  SD_GRID_LOOP(i, n)
    store(y + i, apply(op, load(a[i * sa]), load(b[i * sb])));
}

template <class T>
__global__ void binary_broadcast_kernel(BinaryOp op, const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y,
                                        int64_t n, Broadcast bc) {
  SD_GRID_LOOP(i, n) {
    int64_t rest = i, ia = 0, ib = 0;
    for (int d = bc.rank - 1; d >= 0; --d) {
      const int64_t c = rest % bc.dims[d];
      rest /= bc.dims[d];
      ia += c * bc.a_strides[d];
      ib += c * bc.b_strides[d];
    }
    store(y + i, apply(op, load(a[ia]), load(b[ib])));
  }
}

template <class From, class To>
__global__ void convert_kernel(const From* __restrict__ x, To* __restrict__ y, int64_t n) {
  SD_GRID_LOOP(i, n)
    store(y + i, load(x[i]));
}

}  // namespace

template <class T>
int launch_unary(UnaryOp op, const T* x, T* y, int64_t n, float alpha, float beta, void* stream) {
  if (n <= 0) return cudaSuccess;
  unary_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(op, x, y, n, alpha, beta);
  return cudaGetLastError();
}

template <class T>
int launch_binary(BinaryOp op, const T* a, const T* b, T* y, int64_t n, const Broadcast& bc, void* stream) {
  if (n <= 0) return cudaSuccess;
  bool a_full = true, b_full = true, a_scalar = true, b_scalar = true;
  int64_t stride = 1;
  for (int d = bc.rank - 1; d >= 0; --d) {
    if (bc.dims[d] != 1) {
      a_full = a_full && bc.a_strides[d] == stride;
      b_full = b_full && bc.b_strides[d] == stride;
      a_scalar = a_scalar && bc.a_strides[d] == 0;
      b_scalar = b_scalar && bc.b_strides[d] == 0;
    }
    stride *= bc.dims[d];
  }
  auto s = static_cast<cudaStream_t>(stream);
  if ((a_full || a_scalar) && (b_full || b_scalar)) {
    binary_flat_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, a, a_full ? 1 : 0, b, b_full ? 1 : 0, y, n);
  } else {
    binary_broadcast_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, a, b, y, n, bc);
  }
  return cudaGetLastError();
}

int launch_float_to_half(const float* x, __half* y, int64_t n, void* stream) {
  if (n <= 0) return cudaSuccess;
  convert_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, y, n);
  return cudaGetLastError();
}

int launch_half_to_float(const __half* x, float* y, int64_t n, void* stream) {
  if (n <= 0) return cudaSuccess;
  convert_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, y, n);
  return cudaGetLastError();
}

template int launch_unary<float>(UnaryOp, const float*, float*, int64_t, float, float, void*);
template int launch_unary<__half>(UnaryOp, const __half*, __half*, int64_t, float, float, void*);
template int launch_binary<float>(BinaryOp, const float*, const float*, float*, int64_t, const Broadcast&, void*);
template int launch_binary<__half>(BinaryOp, const __half*, const __half*, __half*, int64_t, const Broadcast&, void*);

}  // namespace sd::native::cuda
