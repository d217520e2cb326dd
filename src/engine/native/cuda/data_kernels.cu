// Simple, correct kernels for the CUDA backend's data movement and small reductions: grid-stride
// loops, one output element per thread (per row for softmax). Memory-bound; not tuned yet.
#include <cuda_runtime.h>

#include <cfloat>

#include "engine/native/cuda/data_kernels.h"
#include "engine/native/cuda/launch.cuh"

namespace sd::native::cuda {
namespace {

__global__ void strided_copy_kernel(StridedCopy c, int64_t total, const float* __restrict__ src, float* __restrict__ dst) {
  SD_GRID_LOOP(i, total) {
    int64_t rest = i, s = c.src_offset, d = c.dst_offset;
    for (int k = c.rank - 1; k >= 0; --k) {
      const int64_t idx = rest % c.dims[k];
      rest /= c.dims[k];
      s += idx * c.src_strides[k];
      d += idx * c.dst_strides[k];
    }
    dst[d] = src[s];
  }
}

__global__ void pool_kernel(PoolParams p, const float* __restrict__ x, float* __restrict__ y) {
  const int64_t total = p.n * p.c * p.oh * p.ow;
  SD_GRID_LOOP(i, total) {
    const Index4 at = index4(i, p.c, p.oh, p.ow, p.dst_nhwc);
    const int64_t n = at.n, c = at.c, oy = at.y, ox = at.x;
    float acc = p.max ? -FLT_MAX : 0.f;
    int64_t count = 0;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.sh - p.pt + ky;
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const int64_t ix = ox * p.sw - p.pl + kx;
        const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
        if (!inside) {
          count += p.include_pad;
          continue;
        }
        const float v = x[offset4(n, c, iy, ix, p.c, p.h, p.w, p.src_nhwc)];
        acc = p.max ? fmaxf(acc, v) : acc + v;
        ++count;
      }
    }
    y[i] = p.max ? acc : (count > 0 ? acc / static_cast<float>(count) : 0.f);
  }
}

__global__ void resize_nearest_kernel(ResizeParams p, int64_t total, const float* __restrict__ x, float* __restrict__ y) {
  SD_GRID_LOOP(i, total) {
    int64_t rest = i, src = 0, stride = 1;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = rest % p.out_dims[d];
      rest /= p.out_dims[d];
      src += (o * p.in_dims[d] / p.out_dims[d]) * stride;
      stride *= p.in_dims[d];
    }
    y[i] = x[src];
  }
}

__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t outer, int64_t axis, int64_t inner) {
  SD_GRID_LOOP(r, outer * inner) {
    const int64_t o = r / inner, in = r % inner;
    const float* xr = x + o * axis * inner + in;
    float* yr = y + o * axis * inner + in;
    float m = -FLT_MAX;
    for (int64_t k = 0; k < axis; ++k) m = fmaxf(m, xr[k * inner]);
    float sum = 0.f;
    for (int64_t k = 0; k < axis; ++k) sum += expf(xr[k * inner] - m);
    for (int64_t k = 0; k < axis; ++k) yr[k * inner] = expf(xr[k * inner] - m) / sum;
  }
}

__global__ void bin_expectation_kernel(BinExpectationParams p, const float* __restrict__ x, const float* __restrict__ w,
                                       float* __restrict__ y) {
  SD_GRID_LOOP(i, p.n * p.s * p.a) {
    const int64_t a = i % p.a, r = i / p.a, s = r % p.s, n = r / p.s;
    const float* xr = x + n * p.stride_n + s * p.stride_s + a;
    float m = -FLT_MAX;
    for (int64_t k = 0; k < p.k; ++k) m = fmaxf(m, xr[k * p.stride_k]);
    float sum = 0.f, dot = 0.f;
    for (int64_t k = 0; k < p.k; ++k) {
      const float e = expf(xr[k * p.stride_k] - m);
      sum += e;
      dot += e * w[k];
    }
    y[i] = dot / sum + p.bias;
  }
}

}  // namespace

int launch_strided_copy(const StridedCopy& c, const float* src, float* dst, void* stream) {
  int64_t total = 1;
  for (int k = 0; k < c.rank; ++k) total *= c.dims[k];
  if (total <= 0) return cudaSuccess;
  strided_copy_kernel<<<blocks_for(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(c, total, src, dst);
  return cudaGetLastError();
}

int launch_pool(const PoolParams& p, const float* x, float* y, void* stream) {
  const int64_t total = p.n * p.c * p.oh * p.ow;
  if (total <= 0) return cudaSuccess;
  pool_kernel<<<blocks_for(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p, x, y);
  return cudaGetLastError();
}

int launch_resize_nearest(const ResizeParams& p, const float* x, float* y, void* stream) {
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d) total *= p.out_dims[d];
  if (total <= 0) return cudaSuccess;
  resize_nearest_kernel<<<blocks_for(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p, total, x, y);
  return cudaGetLastError();
}

int launch_softmax(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner, void* stream) {
  if (outer * inner <= 0 || axis <= 0) return cudaSuccess;
  softmax_kernel<<<blocks_for(outer * inner), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, y, outer, axis, inner);
  return cudaGetLastError();
}

int launch_bin_expectation(const BinExpectationParams& p, const float* x, const float* w, float* y, void* stream) {
  const int64_t total = p.n * p.s * p.a;
  if (total <= 0) return cudaSuccess;
  bin_expectation_kernel<<<blocks_for(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p, x, w, y);
  return cudaGetLastError();
}

}  // namespace sd::native::cuda
