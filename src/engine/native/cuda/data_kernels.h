// Data movement and small reductions of the CUDA backend (data_kernels.cu), behind a plain C++
// interface: strided copies (Slice, Transpose, Concat, Split), pooling, nearest resize, softmax
// and the DFL bin expectation. Element type T: float or __half (--precision fp16: fp16 storage,
// float arithmetic), both instantiated in data_kernels.cu; each launcher returns the launch's
// cudaError_t as an int.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace sd::native::cuda {

inline constexpr int kMaxCopyRank = 8;

// dst[dst_offset + sum_d i_d * dst_strides[d]] = src[src_offset + sum_d i_d * src_strides[d]] for
// every index i of `dims` (element strides; negative source strides for reversed slices).
struct StridedCopy {
  int rank = 0;
  int64_t dims[kMaxCopyRank] = {};
  int64_t src_strides[kMaxCopyRank] = {}, dst_strides[kMaxCopyRank] = {};
  int64_t src_offset = 0, dst_offset = 0;
};
template <class T>
int launch_strided_copy(const StridedCopy& c, const T* src, T* dst, void* stream);

struct PoolParams {
  int64_t n, c, h, w, kh, kw, sh, sw, pt, pl, oh, ow;
  bool max = true, include_pad = false, src_nhwc = false, dst_nhwc = false;
};
template <class T>
int launch_pool(const PoolParams& p, const T* x, T* y, void* stream);

// Nearest-neighbour resize in any layout: along every dim, input index floor(out_index * in / out)
// (asymmetric coordinates and floor rounding, exact for integer upsampling factors).
struct ResizeParams {
  int rank = 0;
  int64_t in_dims[kMaxCopyRank] = {}, out_dims[kMaxCopyRank] = {};
};
template <class T>
int launch_resize_nearest(const ResizeParams& p, const T* x, T* y, void* stream);

// Softmax over the middle dim of [outer, axis, inner].
template <class T>
int launch_softmax(const T* x, T* y, int64_t outer, int64_t axis, int64_t inner, void* stream);

// YOLOv8's DFL (cpu/bin_expectation.cpp): y[r, a] = bias + sum_k w[k] softmax_k(x[...]) for rows
// r = (n, s) and anchors a, the k-th bin at x[n * stride_n + s * stride_s + k * stride_k + a].
struct BinExpectationParams {
  int64_t n, s, k, a, stride_n, stride_s, stride_k;
  float bias = 0;
};
template <class T>
int launch_bin_expectation(const BinExpectationParams& p, const T* x, const T* w, T* y, void* stream);

}  // namespace sd::native::cuda
