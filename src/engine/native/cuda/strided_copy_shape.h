// Host-side reshaping of the CUDA backend's strided copies (Slice, Transpose, Concat, Split) and
// nearest resizes before launch, so that the kernels move 16 bytes per thread where the layout
// allows: the first GPU run's profile (docs/gpu-runs/2026-11-27-h100-run2) had Concat, Split,
// Resize and the layout conversions at 5.2 of 21.4 ms of YOLOv8n fp16 at batch 32, at about a
// seventh of the memory bandwidth, one 2-byte element per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "engine/native/cuda/data_kernels.h"

namespace sd::native::cuda {

// The same copy with fewer, longer dimensions: size-1 dimensions dropped, and a dimension merged
// into the next inner one wherever both sides step over the pair as one run.
StridedCopy simplify_copy(const StridedCopy& c);

// The copy in units of `vector_bytes` (a multiple of elem_bytes): where the innermost dimension
// is contiguous on both sides and its length, every other stride and both offsets are multiples
// of the vector's elements, and both base addresses are aligned to it. nullopt otherwise.
std::optional<StridedCopy> widen_copy(const StridedCopy& c, size_t elem_bytes, size_t vector_bytes, uintptr_t src, uintptr_t dst);

// Whether every index the copy computes (each side's offset plus its walk) fits a signed 32-bit
// integer, and the element count half of it (so that the grid-stride loop's last step cannot
// overflow): then the kernel divides in 32 bits (a 64-bit division is a long emulated sequence on
// the GPU, and the strided copy makes one per dimension per element).
bool fits_32bit_index(const StridedCopy& c);
// The same for a nearest resize (its input element count, and its output's half of it).
bool fits_32bit_index(const ResizeParams& p);

// For the tests: while forced, every launch that would take its 32-bit index path (strided copy,
// interleave, nearest resize, pooling, the fp16 epilogue) takes the 64-bit one, so that the GPU
// tests run those kernels too (no model a test runs reaches 2^30 elements). Process-wide.
void force_64bit_indices(bool on);
bool forced_64bit_indices();

// The one place a launch picks its index arithmetic: launch(I{}) with I = Narrow (its 32-bit
// type) where `fits` holds (fits_32bit_index, or the launcher's own bound) and no test forces the
// 64-bit path, else with I = int64_t. Both calls return the launch's cudaError_t as an int.
template <class Narrow, class Launch>
int with_index_type(bool fits, Launch&& launch) {
  return fits && !forced_64bit_indices() ? launch(Narrow{}) : launch(int64_t{});
}

// A planar-to-interleaved copy: n times, k planes of p elements each into p runs of k
// interleaved elements (an NCHW to NHWC layout conversion of a few channels: a model's 3-channel
// input, every frame). As a plain strided copy its innermost dimension is the k channels, so each
// thread moved one element after three 64-bit divisions, and no 16-byte unit applies; the
// interleave kernel moves a pixel's k elements per thread after one division.
struct InterleaveCopy {
  int64_t n = 1, p = 0, k = 0;
  int64_t src_offset = 0, dst_offset = 0;
};

// The simplified copy (simplify_copy) as an interleave of 2 to max_k planes, where it is one:
// dims [n,] p, k with source strides [k*p,] 1, p and destination strides [k*p,] k, 1. nullopt
// otherwise.
std::optional<InterleaveCopy> as_interleave(const StridedCopy& simplified, int64_t max_k);

// A nearest resize whose innermost dimension is not resized (channels-last), in units of
// `vector_bytes`, where that dimension's length is a multiple of the vector's elements and both
// base addresses are aligned to it. nullopt otherwise.
std::optional<ResizeParams> widen_resize(const ResizeParams& p, size_t elem_bytes, size_t vector_bytes, uintptr_t x, uintptr_t y);

}  // namespace sd::native::cuda
