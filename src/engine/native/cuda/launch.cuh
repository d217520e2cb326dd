// What every kernel file of the CUDA backend launches with: the block size, a grid for n
// elements, a grid-stride loop, and a 4-D output index in either layout.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace sd::native::cuda {

// Element access for kernels templated on their storage type (float, or __half with
// --precision fp16): values are loaded as float, computed and accumulated in float, and stored
// rounded to the storage type (round to nearest even, as the host's float_to_half).
__device__ __forceinline__ float load(float v) { return v; }
__device__ __forceinline__ float load(__half v) { return __half2float(v); }
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }

constexpr int kThreads = 256;

// Enough blocks for one element per thread, capped (the grid-stride loop covers the rest).
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 16 ? b : 65535 * 16);
}

#define SD_GRID_LOOP(i, n) \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// Element i of an [n, c, h, w] tensor stored NHWC or NCHW, as (n, c, y, x); I the index
// arithmetic's type (int32_t where the tensor allows: a 64-bit division is a long emulated
// sequence on the GPU).
template <class I = int64_t>
struct Index4 {
  I n, c, y, x;
};
template <class I>
__device__ __forceinline__ Index4<I> index4(I i, I c, I h, I w, bool nhwc) {
  Index4<I> r;
  if (nhwc) {
    r.c = i % c, i /= c;
    r.x = i % w, i /= w;
    r.y = i % h, r.n = i / h;
  } else {
    r.x = i % w, i /= w;
    r.y = i % h, i /= h;
    r.c = i % c, r.n = i / c;
  }
  return r;
}

// Offset of (n, c, y, x) in an [n, c, h, w] tensor stored NHWC or NCHW.
template <class I>
__device__ __forceinline__ I offset4(I n, I ch, I y, I x, I c, I h, I w, bool nhwc) {
  return nhwc ? ((n * h + y) * w + x) * c + ch : ((n * c + ch) * h + y) * w + x;
}

}  // namespace sd::native::cuda
