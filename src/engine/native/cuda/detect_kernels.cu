// Decode and NMS kernels (detect_kernels.h). The IoU is sd::iou's arithmetic operation for
// operation in round-to-nearest intrinsics (no FMA contraction), so the suppression decisions
// are bit-identical to the CPU's.
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>


#include "engine/native/cuda/detect_kernels.h"
#include "engine/native/cuda/launch.cuh"

namespace sd::native::cuda {
namespace {

constexpr int kTile = 64;  // boxes per block side of the overlap matrix, one bit each in a word
// The walk is one block: the most threads a block has, for its per-tile OR of up to 64 rows into
// the later words (64 x 131 at 8400 candidates) and its copies. Its loops stride by blockDim.x,
// and one thread per box of a tile loads the tile's rows: at least kTile threads.
constexpr int kWalkThreads = 1024;
static_assert(kWalkThreads >= kTile && kWalkThreads <= 1024);

__global__ void decode_yolov8_kernel(YoloV8HeadView h, float conf, GpuBox* out, int* count) {
  SD_GRID_LOOP(a, h.anchors) {
    const int64_t channels = 4 + h.num_classes;
    // Element (channel k) of this anchor.
    auto at = [&](int64_t k) { return h.transposed ? h.data[a * channels + k] : h.data[k * h.anchors + a]; };
    int best = 0;
    float score = at(4);
    for (int c = 1; c < h.num_classes; ++c) {
      const float s = at(4 + c);
      if (s > score) score = s, best = c;
    }
    if (!(score >= conf)) continue;
    const float cx = at(0), cy = at(1), w = at(2), hh = at(3);
    const float hw = __fmul_rn(0.5f, w), hh2 = __fmul_rn(0.5f, hh);
    const int slot = atomicAdd(count, 1);
    out[slot] = GpuBox{__fsub_rn(cx, hw), __fsub_rn(cy, hh2), __fadd_rn(cx, hw), __fadd_rn(cy, hh2), score, best,
                       static_cast<int>(a)};
  }
}

__global__ void decode_objectness_kernel(ObjectnessHeadView h, float conf, GpuBox* out, int* count) {
  SD_GRID_LOOP(a, h.anchors) {
    const float* p = h.data + a * (5 + h.num_classes);
    const float obj = p[4];
    if (!(obj >= conf)) continue;
    int best = 0;
    for (int c = 1; c < h.num_classes; ++c)
      if (p[5 + c] > p[5 + best]) best = c;
    const float score = __fmul_rn(obj, p[5 + best]);
    if (!(score >= conf)) continue;
    float cx = p[0], cy = p[1], w = p[2], hh = p[3];
    if (h.num_strides > 0) {
      // The grid cell of anchor a: levels one after the other, each row-major.
      int64_t k = a;
      int level = 0, gw = 0;
      for (; level < h.num_strides; ++level) {
        const int s = h.strides[level];
        gw = (h.input_width + s - 1) / s;
        const int64_t cells = static_cast<int64_t>(gw) * ((h.input_height + s - 1) / s);
        if (k < cells) break;
        k -= cells;
      }
      if (level == h.num_strides) continue;  // more anchors than cells: the host checks this
      const float stride = static_cast<float>(h.strides[level]);
      cx = __fmul_rn(__fadd_rn(cx, static_cast<float>(k % gw)), stride);
      cy = __fmul_rn(__fadd_rn(cy, static_cast<float>(k / gw)), stride);
      w = __fmul_rn(expf(w), stride);
      hh = __fmul_rn(expf(hh), stride);
    }
    const float hw = __fmul_rn(0.5f, w), hh2 = __fmul_rn(0.5f, hh);
    const int slot = atomicAdd(count, 1);
    out[slot] = GpuBox{__fsub_rn(cx, hw), __fsub_rn(cy, hh2), __fadd_rn(cx, hw), __fadd_rn(cy, hh2), score, best,
                       static_cast<int>(a)};
  }
}

// Nms::run's key: descending score in the high half (ordered_bits, inverted), index in the low.
__device__ __forceinline__ unsigned long long sort_key(const GpuBox& b) {
  const float f = b.score == 0.f ? 0.f : b.score;  // -0 ties with +0
  const unsigned u = __float_as_uint(f);
  const unsigned ordered = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<unsigned long long>(~ordered) << 32) | static_cast<unsigned>(b.index);
}

__global__ void keys_kernel(const GpuBox* boxes, int n, unsigned long long* keys, int* values) {
  SD_GRID_LOOP(i, n) {
    keys[i] = sort_key(boxes[i]);
    values[i] = static_cast<int>(i);
  }
}

__global__ void gather_kernel(const GpuBox* boxes, const int* order, int n, GpuBox* sorted) {
  SD_GRID_LOOP(i, n) sorted[i] = boxes[order[i]];
}

__device__ __forceinline__ float box_area(const GpuBox& d) {
  const float w = __fsub_rn(d.x2, d.x1), h = __fsub_rn(d.y2, d.y1);
  return (w > 0 && h > 0) ? __fmul_rn(w, h) : 0.f;
}

// sd::iou(a, b) (core/detection.h).
__device__ __forceinline__ float iou(const GpuBox& a, const GpuBox& b) {
  const float ix1 = a.x1 > b.x1 ? a.x1 : b.x1;
  const float iy1 = a.y1 > b.y1 ? a.y1 : b.y1;
  const float ix2 = a.x2 < b.x2 ? a.x2 : b.x2;
  const float iy2 = a.y2 < b.y2 ? a.y2 : b.y2;
  const float iw = __fsub_rn(ix2, ix1), ih = __fsub_rn(iy2, iy1);
  if (iw <= 0 || ih <= 0) return 0.f;
  const float inter = __fmul_rn(iw, ih);
  const float uni = __fsub_rn(__fadd_rn(box_area(a), box_area(b)), inter);
  return uni > 0 ? __fdiv_rn(inter, uni) : 0.f;
}

// Block (col, row): bit j of mask[i * words + col] is set when box col*64+j comes after box i
// (i in this row tile), is of the same class, and overlaps it by more than the threshold.
__global__ void overlap_kernel(const GpuBox* sorted, int n, GpuNmsParams p, unsigned long long* mask, int words) {
  const int row = blockIdx.y, col = blockIdx.x;
  if (row > col) return;  // the walk reads only words at or after the row's own
  __shared__ GpuBox tile[kTile];
  const int cols = min(kTile, n - col * kTile), rows = min(kTile, n - row * kTile);
  if (threadIdx.x < cols) tile[threadIdx.x] = sorted[col * kTile + threadIdx.x];
  __syncthreads();
  if (threadIdx.x >= rows) return;
  const int i = row * kTile + threadIdx.x;
  const GpuBox a = sorted[i];
  unsigned long long bits = 0;
  for (int j = row == col ? threadIdx.x + 1 : 0; j < cols; ++j)
    if ((p.agnostic || tile[j].class_id == a.class_id) && iou(a, tile[j]) > p.iou_threshold) bits |= 1ull << j;
  mask[static_cast<int64_t>(i) * words + col] = bits;
}

// The greedy walk in score order, one block, a 64-box tile at a time: thread 0 decides the tile's
// boxes from shared memory alone (a box is kept unless a kept box removed it; the tile's own rows'
// bits within the tile loaded first), then the whole block copies the tile's kept boxes and ORs
// their rows into every later word of `removed` (shared, words * 8 bytes) at once. The walk of one
// box at a time waited for one row's load per kept box (300 kept: most of the 0.8 ms that decode +
// NMS took per frame on the H200 in GPU run 4); this waits for two loads per tile, and none for a
// tile whose boxes are all removed already.
// __launch_bounds__: a later change that needs more than 64 registers a thread fails to compile,
// not to launch (32 today).
__global__ void __launch_bounds__(kWalkThreads) walk_kernel(const GpuBox* sorted, int n, const unsigned long long* mask, int words,
                                                            int max_det, GpuBox* kept, int* kept_count) {
  extern __shared__ unsigned long long removed[];
  __shared__ unsigned long long diag[kTile];
  __shared__ int rows[kTile];
  __shared__ int count, tile_kept, stop;
  for (int w = threadIdx.x; w < words; w += blockDim.x) removed[w] = 0;
  if (threadIdx.x == 0) count = 0, tile_kept = 0, stop = 0;
  __syncthreads();
  for (int t = 0; t < words; ++t) {
    const int base = t * kTile, cols = min(kTile, n - base);
    const unsigned long long all = cols == kTile ? ~0ull : (1ull << cols) - 1;
    if ((removed[t] & all) == all) continue;  // the same in every thread: nothing to decide here
    if (threadIdx.x < cols) diag[threadIdx.x] = mask[static_cast<int64_t>(base + threadIdx.x) * words + t];
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long cur = removed[t];
      int k = 0;
      for (int j = 0; j < cols; ++j) {
        if ((cur >> j) & 1ull) continue;
        if (max_det > 0 && count + k == max_det) {
          stop = 1;
          break;
        }
        rows[k++] = base + j;
        cur |= diag[j];
      }
      tile_kept = k;
    }
    __syncthreads();
    const int k = tile_kept, first = count, later = words - t - 1;
    if (threadIdx.x < k) kept[first + threadIdx.x] = sorted[rows[threadIdx.x]];
    for (int item = threadIdx.x; item < k * later; item += blockDim.x) {
      const int w = t + 1 + item % later;  // consecutive threads: consecutive words of one row
      atomicOr(&removed[w], mask[static_cast<int64_t>(rows[item / later]) * words + w]);
    }
    __syncthreads();  // removed[], rows[] and count settled before the next tile reads or changes them
    if (threadIdx.x == 0) count = first + k;
    __syncthreads();
    if (stop) break;
  }
  if (threadIdx.x == 0) *kept_count = count;
}

struct Scratch {
  unsigned long long *keys_in, *keys_out, *mask;
  int *values_in, *values_out;
  GpuBox* sorted;
  void* cub;
  size_t cub_bytes, total;
};

size_t align_up(size_t v) { return (v + 255) / 256 * 256; }

// Carves the scratch (or, with base == nullptr, measures it).
cudaError_t layout(int n, char* base, Scratch& s) {
  const int words = (n + kTile - 1) / kTile;
  s.cub_bytes = 0;
  cudaError_t e = cub::DeviceRadixSort::SortPairs(nullptr, s.cub_bytes, static_cast<unsigned long long*>(nullptr),
                                                  static_cast<unsigned long long*>(nullptr), static_cast<int*>(nullptr),
                                                  static_cast<int*>(nullptr), n);
  if (e != cudaSuccess) return e;
  size_t at = 0;
  auto take = [&](size_t bytes) {
    char* p = base ? base + at : nullptr;
    at += align_up(bytes);
    return p;
  };
  const size_t nn = static_cast<size_t>(n);
  s.keys_in = reinterpret_cast<unsigned long long*>(take(nn * 8));
  s.keys_out = reinterpret_cast<unsigned long long*>(take(nn * 8));
  s.values_in = reinterpret_cast<int*>(take(nn * 4));
  s.values_out = reinterpret_cast<int*>(take(nn * 4));
  s.sorted = reinterpret_cast<GpuBox*>(take(nn * sizeof(GpuBox)));
  s.mask = reinterpret_cast<unsigned long long*>(take(nn * static_cast<size_t>(words) * 8));
  s.cub = take(s.cub_bytes);
  s.total = at;
  return cudaSuccess;
}

}  // namespace

int launch_decode_yolov8(const YoloV8HeadView& head, float conf, GpuBox* out, int* count, void* stream) {
  if (head.anchors <= 0 || head.num_classes < 1) return cudaSuccess;
  decode_yolov8_kernel<<<blocks_for(head.anchors), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(head, conf, out, count);
  return cudaGetLastError();
}

int launch_decode_objectness(const ObjectnessHeadView& head, float conf, GpuBox* out, int* count, void* stream) {
  if (head.anchors <= 0 || head.num_classes < 1) return cudaSuccess;
  decode_objectness_kernel<<<blocks_for(head.anchors), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(head, conf, out,
                                                                                                         count);
  return cudaGetLastError();
}

int nms_scratch_bytes(int n, size_t* bytes) {
  Scratch s;
  const cudaError_t e = layout(n, nullptr, s);
  *bytes = s.total;
  return e;
}

int launch_nms(const GpuBox* boxes, int n, const GpuNmsParams& p, void* scratch, size_t scratch_bytes, GpuBox* kept,
               int* kept_count, void* stream) {
  const cudaStream_t st = static_cast<cudaStream_t>(stream);
  if (n <= 0) return cudaMemsetAsync(kept_count, 0, sizeof(int), st);
  Scratch s;
  cudaError_t e = layout(n, static_cast<char*>(scratch), s);
  if (e != cudaSuccess) return e;
  if (s.total > scratch_bytes) return cudaErrorInvalidValue;
  const int words = (n + kTile - 1) / kTile;
  const size_t shared = static_cast<size_t>(words) * 8;
  if (shared > 46 * 1024) return cudaErrorInvalidValue;  // over 376832 candidates (the walk's own 0.8 KB beside it)
  keys_kernel<<<blocks_for(n), kThreads, 0, st>>>(boxes, n, s.keys_in, s.values_in);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  e = cub::DeviceRadixSort::SortPairs(s.cub, s.cub_bytes, s.keys_in, s.keys_out, s.values_in, s.values_out, n, 0, 64, st);
  if (e != cudaSuccess) return e;
  gather_kernel<<<blocks_for(n), kThreads, 0, st>>>(boxes, s.values_out, n, s.sorted);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  overlap_kernel<<<dim3(words, words), kTile, 0, st>>>(s.sorted, n, p, s.mask, words);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  walk_kernel<<<1, kWalkThreads, shared, st>>>(s.sorted, n, s.mask, words, p.max_det, kept, kept_count);
  return cudaGetLastError();
}

}  // namespace sd::native::cuda
