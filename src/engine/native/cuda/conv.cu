// Direct convolution, one thread per output element: reads kh * kw * c / group inputs and as
// many weights, all through the caches. Correct for every geometry; not fast (cuDNN's kernels are
// the fast path). Layouts: NCHW or NHWC on either side, as the planner says.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "engine/native/cuda/conv.h"
#include "engine/native/cuda/launch.cuh"
#include "engine/native/cuda/strided_copy_shape.h"

namespace sd::native::cuda {
namespace {

// kFast (the fp16 epilogue, whose results are rounded to fp16's 11 bits): SiLU and sigmoid
// through the hardware's approximate exponential and division (__expf, __fdividef: relative
// errors near 2^-21) instead of expf and an IEEE division, each a long instruction sequence that
// made the pass compute-bound next to its 4 bytes of memory traffic per element.
template <bool kFast = false>
__device__ __forceinline__ float post_op(int kind, float v, float alpha, float beta, float sum) {
  switch (kind) {
    case 0: return v > 0.f ? v : 0.f;                                   // relu
    case 1: return v >= 0.f ? v : alpha * v;                            // leaky relu
    case 2: return kFast ? __fdividef(v, 1.f + __expf(-v)) : v / (1.f + expf(-v));    // silu
    case 3: return kFast ? __fdividef(1.f, 1.f + __expf(-v)) : 1.f / (1.f + expf(-v));  // sigmoid
    case 4: return v * fminf(1.f, fmaxf(0.f, v / 6.f + 0.5f));          // hardswish
    case 5: return fminf(beta, fmaxf(alpha, v));                        // clip
    case 6: return v + sum;                                             // residual sum
  }
  return v;
}

template <class T>
__global__ void conv_direct_kernel(ConvParams p, const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                                   const T* __restrict__ sum, T* __restrict__ y) {
  const int64_t total = p.n * p.oc * p.oh * p.ow;
  const int64_t cg = p.c / p.group, ocg = p.oc / p.group;
  SD_GRID_LOOP(i, total) {
    const Index4 at = index4(i, p.oc, p.oh, p.ow, p.dst_nhwc);
    const int64_t n = at.n, o = at.c, oy = at.y, ox = at.x;
    const int64_t g = o / ocg;
    float acc = bias ? load(bias[o]) : 0.f;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.sh - p.pt + ky * p.dh;
      if (iy < 0 || iy >= p.h) continue;
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const int64_t ix = ox * p.sw - p.pl + kx * p.dw;
        if (ix < 0 || ix >= p.w) continue;
        for (int64_t ci = 0; ci < cg; ++ci) {
          const int64_t c = g * cg + ci;
          acc += load(x[offset4(n, c, iy, ix, p.c, p.h, p.w, p.src_nhwc)]) * load(w[((o * cg + ci) * p.kh + ky) * p.kw + kx]);
        }
      }
    }
    for (int k = 0; k < p.post_count; ++k) acc = post_op(p.post_kind[k], acc, p.post_alpha[k], p.post_beta[k], sum ? load(sum[i]) : 0.f);
    store(y + i, acc);
  }
}

// cuDNN's convolution leaves y = conv(x, w); this adds the bias and applies the post ops in place,
// exactly as the direct kernel's tail does, in one pass over y.
// With fp16 storage cuDNN has rounded its float32 accumulator to fp16 once already; the epilogue
// rounds again after bias and post ops (the direct kernel rounds once): within fp16 tolerance.
template <class T>
__global__ void conv_epilogue_kernel(ConvParams p, const T* __restrict__ bias, const T* __restrict__ sum, T* __restrict__ y) {
  const int64_t total = p.n * p.oc * p.oh * p.ow;
  SD_GRID_LOOP(i, total) {
    float acc = load(y[i]);
    if (bias) acc += load(bias[index4(i, p.oc, p.oh, p.ow, p.dst_nhwc).c]);
    for (int k = 0; k < p.post_count; ++k) acc = post_op(p.post_kind[k], acc, p.post_alpha[k], p.post_beta[k], sum ? load(sum[i]) : 0.f);
    store(y + i, acc);
  }
}

// The same epilogue for fp16 NHWC outputs whose channel count is a multiple of 8, 8 channels of
// one pixel per thread: one 16-byte load and store of y (and of the residual) instead of eight
// 2-byte ones. The first GPU run's profile had the scalar pass in every FusedConv step. The same
// arithmetic as conv_epilogue_kernel<__half> but SiLU and sigmoid's approximate exponential and
// division (post_op<true>): within fp16's rounding of it.
union Half8 {
  uint4 raw;
  __half h[8];
};
// I: the index arithmetic's type, int32_t where the output has fewer than 2^30 elements (a 64-bit
// modulo per thread is a long emulated sequence, next to eight multiply-adds and activations).
template <class I>
__global__ void conv_epilogue_half8_kernel(ConvParams p, I vectors, const __half* __restrict__ bias, const __half* __restrict__ sum,
                                           __half* __restrict__ y) {
  const I oc = static_cast<I>(p.oc);
  for (I v = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; v < vectors; v += static_cast<I>(gridDim.x) * blockDim.x) {
    const I c0 = (v * 8) % oc;
    Half8 in, res, out;
    in.raw = reinterpret_cast<const uint4*>(y)[v];
    if (sum) res.raw = reinterpret_cast<const uint4*>(sum)[v];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      float acc = __half2float(in.h[k]);
      if (bias) acc += __half2float(bias[c0 + k]);
      for (int q = 0; q < p.post_count; ++q)
        acc = post_op<true>(p.post_kind[q], acc, p.post_alpha[q], p.post_beta[q], sum ? __half2float(res.h[k]) : 0.f);
      out.h[k] = __float2half_rn(acc);
    }
    reinterpret_cast<uint4*>(y)[v] = out.raw;
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

template <class T>
int launch_conv_epilogue(const ConvParams& p, const T* bias, const T* sum, T* y, void* stream) {
  const int64_t total = p.n * p.oc * p.oh * p.ow;
  if (total <= 0 || (!bias && p.post_count == 0)) return cudaSuccess;
  if constexpr (std::is_same_v<T, __half>) {
    if (p.dst_nhwc && p.oc % 8 == 0 && aligned16(y) && (!sum || aligned16(sum))) {
      const auto st = static_cast<cudaStream_t>(stream);
      return with_index_type<int32_t>(total < (int64_t{1} << 30), [&](auto i) {
        using I = decltype(i);
        conv_epilogue_half8_kernel<I><<<blocks_for(total / 8), kThreads, 0, st>>>(p, static_cast<I>(total / 8), bias, sum, y);
        return static_cast<int>(cudaGetLastError());
      });
    }
  }
  conv_epilogue_kernel<<<blocks_for(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p, bias, sum, y);
  return cudaGetLastError();
}

template <class T>
int launch_conv_direct(const ConvParams& p, const T* x, const T* w, const T* bias, const T* sum, T* y, void* stream) {
  const int64_t total = p.n * p.oc * p.oh * p.ow;
  if (total <= 0) return cudaSuccess;
  conv_direct_kernel<<<blocks_for(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p, x, w, bias, sum, y);
  return cudaGetLastError();
}

template int launch_conv_direct<float>(const ConvParams&, const float*, const float*, const float*, const float*, float*, void*);
template int launch_conv_epilogue<float>(const ConvParams&, const float*, const float*, float*, void*);
template int launch_conv_direct<__half>(const ConvParams&, const __half*, const __half*, const __half*, const __half*, __half*, void*);
template int launch_conv_epilogue<__half>(const ConvParams&, const __half*, const __half*, __half*, void*);

}  // namespace sd::native::cuda
