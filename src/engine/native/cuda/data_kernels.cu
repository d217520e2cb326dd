// Simple, correct kernels for the CUDA backend's data movement and small reductions: grid-stride
// loops, one output element per thread (per row for softmax). Memory-bound; copies and resizes
// move up to 16 bytes per thread where the layout allows (strided_copy_shape.h).
#include <cuda_runtime.h>

#include <cfloat>

#include "engine/native/cuda/data_kernels.h"
#include "engine/native/cuda/launch.cuh"
#include "engine/native/cuda/strided_copy_shape.h"

namespace sd::native::cuda {
namespace {

// I: the index arithmetic's type, int32_t where every index fits (fits_32bit_index).
template <class T, class I>
__global__ void strided_copy_kernel(StridedCopy c, I total, const T* __restrict__ src, T* __restrict__ dst) {
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < total; i += static_cast<I>(gridDim.x) * blockDim.x) {
    I rest = i, s = static_cast<I>(c.src_offset), d = static_cast<I>(c.dst_offset);
    for (int k = c.rank - 1; k >= 0; --k) {
      const I dim = static_cast<I>(c.dims[k]);
      const I idx = rest % dim;
      rest /= dim;
      s += idx * static_cast<I>(c.src_strides[k]);
      d += idx * static_cast<I>(c.dst_strides[k]);
    }
    dst[d] = src[s];
  }
}

// One thread a pixel: its k elements read from the k planes (coalesced plane by plane across the
// threads), written side by side. Index arithmetic in I: unsigned 32 bits where the copy fits
// (fits_32bit_index; a 64-bit division is a long emulated sequence on the GPU).
template <class T, class I>
__global__ void interleave_kernel(InterleaveCopy c, I pixels, I p, I k, const T* __restrict__ src, T* __restrict__ dst) {
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < pixels; i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I n = i / p, px = i - n * p;
    const T* s = src + c.src_offset + static_cast<int64_t>(n * k * p + px);
    T* d = dst + c.dst_offset + static_cast<int64_t>(n * k * p + px * k);
    for (I j = 0; j < k; ++j) d[j] = s[static_cast<int64_t>(j * p)];
  }
}

// I: int32_t where the input and output fit (launch_pool), else int64_t.
template <class T, class I>
__global__ void pool_kernel(PoolParams p, I total, const T* __restrict__ x, T* __restrict__ y) {
  const I C = static_cast<I>(p.c), H = static_cast<I>(p.h), W = static_cast<I>(p.w);
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < total; i += static_cast<I>(gridDim.x) * blockDim.x) {
    const Index4<I> at = index4<I>(i, C, static_cast<I>(p.oh), static_cast<I>(p.ow), p.dst_nhwc);
    const I n = at.n, c = at.c, oy = at.y, ox = at.x;
    float acc = p.max ? -FLT_MAX : 0.f;
    int64_t count = 0;
    for (I ky = 0; ky < static_cast<I>(p.kh); ++ky) {
      const I iy = oy * static_cast<I>(p.sh) - static_cast<I>(p.pt) + ky;
      for (I kx = 0; kx < static_cast<I>(p.kw); ++kx) {
        const I ix = ox * static_cast<I>(p.sw) - static_cast<I>(p.pl) + kx;
        const bool inside = iy >= 0 && iy < H && ix >= 0 && ix < W;
        if (!inside) {
          count += p.include_pad;
          continue;
        }
        const float v = load(x[offset4<I>(n, c, iy, ix, C, H, W, p.src_nhwc)]);
        acc = p.max ? fmaxf(acc, v) : acc + v;
        ++count;
      }
    }
    store(y + i, p.max ? acc : (count > 0 ? acc / static_cast<float>(count) : 0.f));
  }
}

// I as the strided copy's (fits_32bit_index); o * in_dims[d] in 64 bits.
template <class T, class I>
__global__ void resize_nearest_kernel(ResizeParams p, I total, const T* __restrict__ x, T* __restrict__ y) {
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < total; i += static_cast<I>(gridDim.x) * blockDim.x) {
    I rest = i, src = 0, stride = 1;
    for (int d = p.rank - 1; d >= 0; --d) {
      const I out = static_cast<I>(p.out_dims[d]), in = static_cast<I>(p.in_dims[d]);
      const I o = rest % out;
      rest /= out;
      src += static_cast<I>(static_cast<int64_t>(o) * in / out) * stride;
      stride *= in;
    }
    y[i] = x[src];
  }
}

template <class T>
__global__ void softmax_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t outer, int64_t axis, int64_t inner) {
  SD_GRID_LOOP(r, outer * inner) {
    const int64_t o = r / inner, in = r % inner;
    const T* xr = x + o * axis * inner + in;
    T* yr = y + o * axis * inner + in;
    float m = -FLT_MAX;
    for (int64_t k = 0; k < axis; ++k) m = fmaxf(m, load(xr[k * inner]));
    float sum = 0.f;
    for (int64_t k = 0; k < axis; ++k) sum += expf(load(xr[k * inner]) - m);
    for (int64_t k = 0; k < axis; ++k) store(yr + k * inner, expf(load(xr[k * inner]) - m) / sum);
  }
}

template <class T>
__global__ void bin_expectation_kernel(BinExpectationParams p, const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y) {
  SD_GRID_LOOP(i, p.n * p.s * p.a) {
    const int64_t a = i % p.a, r = i / p.a, s = r % p.s, n = r / p.s;
    const T* xr = x + n * p.stride_n + s * p.stride_s + a;
    float m = -FLT_MAX;
    for (int64_t k = 0; k < p.k; ++k) m = fmaxf(m, load(xr[k * p.stride_k]));
    float sum = 0.f, dot = 0.f;
    for (int64_t k = 0; k < p.k; ++k) {
      const float e = expf(load(xr[k * p.stride_k]) - m);
      sum += e;
      dot += e * load(w[k]);
    }
    store(y + i, dot / sum + p.bias);
  }
}

}  // namespace

template <class V>
int strided_copy_as(const StridedCopy& c, const void* src, void* dst, void* stream) {
  int64_t total = 1;
  for (int k = 0; k < c.rank; ++k) total *= c.dims[k];
  if (total <= 0) return cudaSuccess;
  const auto st = static_cast<cudaStream_t>(stream);
  return with_index_type<int32_t>(fits_32bit_index(c), [&](auto i) {
    using I = decltype(i);
    strided_copy_kernel<V, I><<<blocks_for(total), kThreads, 0, st>>>(c, static_cast<I>(total), static_cast<const V*>(src), static_cast<V*>(dst));
    return static_cast<int>(cudaGetLastError());
  });
}

// Merged dimensions, then the widest unit the layout and addresses allow (strided_copy_shape.h).
template <class T>
int launch_strided_copy(const StridedCopy& copy, const T* src, T* dst, void* stream) {
  const StridedCopy c = simplify_copy(copy);
  const auto s = reinterpret_cast<uintptr_t>(src), d = reinterpret_cast<uintptr_t>(dst);
  if (auto w = widen_copy(c, sizeof(T), 16, s, d)) return strided_copy_as<uint4>(*w, src, dst, stream);
  if (auto w = widen_copy(c, sizeof(T), 8, s, d)) return strided_copy_as<uint2>(*w, src, dst, stream);
  if (auto w = widen_copy(c, sizeof(T), 4, s, d)) return strided_copy_as<uint32_t>(*w, src, dst, stream);
  if (auto t = as_interleave(c, 8)) {
    const int64_t pixels = t->n * t->p;
    const auto st = static_cast<cudaStream_t>(stream);
    if (pixels <= 0) return cudaSuccess;
    return with_index_type<uint32_t>(fits_32bit_index(c), [&](auto i) {  // the same elements as the copy's walk
      using I = decltype(i);
      interleave_kernel<T, I><<<blocks_for(pixels), kThreads, 0, st>>>(*t, static_cast<I>(pixels), static_cast<I>(t->p), static_cast<I>(t->k),
                                                                      src, dst);
      return static_cast<int>(cudaGetLastError());
    });
  }
  return strided_copy_as<T>(c, src, dst, stream);
}

template <class T>
int launch_pool(const PoolParams& p, const T* x, T* y, void* stream) {
  const int64_t total = p.n * p.c * p.oh * p.ow;
  if (total <= 0) return cudaSuccess;
  const auto st = static_cast<cudaStream_t>(stream);
  // 32 bits where the input's elements fit and the output's leave the grid-stride loop room.
  return with_index_type<int32_t>(p.n * p.c * p.h * p.w < (int64_t{1} << 31) && total < (int64_t{1} << 30), [&](auto i) {
    using I = decltype(i);
    pool_kernel<T, I><<<blocks_for(total), kThreads, 0, st>>>(p, static_cast<I>(total), x, y);
    return static_cast<int>(cudaGetLastError());
  });
}

template <class V>
int resize_nearest_as(const ResizeParams& p, const void* x, void* y, void* stream) {
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d) total *= p.out_dims[d];
  if (total <= 0) return cudaSuccess;
  const auto st = static_cast<cudaStream_t>(stream);
  return with_index_type<int32_t>(fits_32bit_index(p), [&](auto i) {
    using I = decltype(i);
    resize_nearest_kernel<V, I><<<blocks_for(total), kThreads, 0, st>>>(p, static_cast<I>(total), static_cast<const V*>(x), static_cast<V*>(y));
    return static_cast<int>(cudaGetLastError());
  });
}

// Channels-last (the innermost dimension kept) in the widest unit it allows (strided_copy_shape.h).
template <class T>
int launch_resize_nearest(const ResizeParams& p, const T* x, T* y, void* stream) {
  const auto xs = reinterpret_cast<uintptr_t>(x), ys = reinterpret_cast<uintptr_t>(y);
  if (auto w = widen_resize(p, sizeof(T), 16, xs, ys)) return resize_nearest_as<uint4>(*w, x, y, stream);
  if (auto w = widen_resize(p, sizeof(T), 8, xs, ys)) return resize_nearest_as<uint2>(*w, x, y, stream);
  if (auto w = widen_resize(p, sizeof(T), 4, xs, ys)) return resize_nearest_as<uint32_t>(*w, x, y, stream);
  return resize_nearest_as<T>(p, x, y, stream);
}

template <class T>
int launch_softmax(const T* x, T* y, int64_t outer, int64_t axis, int64_t inner, void* stream) {
  if (outer * inner <= 0 || axis <= 0) return cudaSuccess;
  softmax_kernel<<<blocks_for(outer * inner), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, y, outer, axis, inner);
  return cudaGetLastError();
}

template <class T>
int launch_bin_expectation(const BinExpectationParams& p, const T* x, const T* w, T* y, void* stream) {
  const int64_t total = p.n * p.s * p.a;
  if (total <= 0) return cudaSuccess;
  bin_expectation_kernel<<<blocks_for(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p, x, w, y);
  return cudaGetLastError();
}

template int launch_strided_copy<float>(const StridedCopy&, const float*, float*, void*);
template int launch_pool<float>(const PoolParams&, const float*, float*, void*);
template int launch_resize_nearest<float>(const ResizeParams&, const float*, float*, void*);
template int launch_softmax<float>(const float*, float*, int64_t, int64_t, int64_t, void*);
template int launch_bin_expectation<float>(const BinExpectationParams&, const float*, const float*, float*, void*);
template int launch_strided_copy<__half>(const StridedCopy&, const __half*, __half*, void*);
template int launch_pool<__half>(const PoolParams&, const __half*, __half*, void*);
template int launch_resize_nearest<__half>(const ResizeParams&, const __half*, __half*, void*);
template int launch_softmax<__half>(const __half*, __half*, int64_t, int64_t, int64_t, void*);
template int launch_bin_expectation<__half>(const BinExpectationParams&, const __half*, const __half*, __half*, void*);

}  // namespace sd::native::cuda
