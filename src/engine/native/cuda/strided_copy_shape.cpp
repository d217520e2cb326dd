#include "engine/native/cuda/strided_copy_shape.h"

#include <algorithm>
#include <atomic>

namespace sd::native::cuda {

StridedCopy simplify_copy(const StridedCopy& c) {
  // Walked from the innermost dimension out; r holds the result innermost first, reversed at the end.
  StridedCopy r;
  for (int k = c.rank - 1; k >= 0; --k) {
    if (c.dims[k] == 1) continue;
    const int last = r.rank - 1;
    if (last >= 0 && c.src_strides[k] == r.dims[last] * r.src_strides[last] && c.dst_strides[k] == r.dims[last] * r.dst_strides[last]) {
      r.dims[last] *= c.dims[k];
      continue;
    }
    r.dims[r.rank] = c.dims[k], r.src_strides[r.rank] = c.src_strides[k], r.dst_strides[r.rank] = c.dst_strides[k];
    ++r.rank;
  }
  for (int a = 0, b = r.rank - 1; a < b; ++a, --b) {
    std::swap(r.dims[a], r.dims[b]);
    std::swap(r.src_strides[a], r.src_strides[b]);
    std::swap(r.dst_strides[a], r.dst_strides[b]);
  }
  r.src_offset = c.src_offset, r.dst_offset = c.dst_offset;
  return r;
}

namespace {
// Elements per vector where a vector holds whole elements and both addresses are aligned to it.
std::optional<int64_t> elements_per_vector(size_t elem_bytes, size_t vector_bytes, uintptr_t a, uintptr_t b) {
  if (elem_bytes == 0 || vector_bytes <= elem_bytes || vector_bytes % elem_bytes || a % vector_bytes || b % vector_bytes) return std::nullopt;
  return static_cast<int64_t>(vector_bytes / elem_bytes);
}
}  // namespace

std::optional<StridedCopy> widen_copy(const StridedCopy& c, size_t elem_bytes, size_t vector_bytes, uintptr_t src, uintptr_t dst) {
  const auto per = elements_per_vector(elem_bytes, vector_bytes, src, dst);
  if (!per || c.rank < 1) return std::nullopt;
  const int64_t v = *per;
  const int in = c.rank - 1;
  if (c.src_strides[in] != 1 || c.dst_strides[in] != 1 || c.dims[in] % v || c.src_offset % v || c.dst_offset % v) return std::nullopt;
  StridedCopy w = c;
  for (int k = 0; k < in; ++k) {
    if (c.src_strides[k] % v || c.dst_strides[k] % v) return std::nullopt;
    w.src_strides[k] = c.src_strides[k] / v, w.dst_strides[k] = c.dst_strides[k] / v;
  }
  w.dims[in] = c.dims[in] / v;
  w.src_offset = c.src_offset / v, w.dst_offset = c.dst_offset / v;
  return w;
}

namespace {
std::atomic<bool> g_forced_64bit{false};
}  // namespace

void force_64bit_indices(bool on) { g_forced_64bit.store(on); }
bool forced_64bit_indices() { return g_forced_64bit.load(std::memory_order_relaxed); }

bool fits_32bit_index(const StridedCopy& c) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  int64_t total = 1, src_hi = c.src_offset, src_lo = c.src_offset, dst_hi = c.dst_offset, dst_lo = c.dst_offset;
  for (int k = 0; k < c.rank; ++k) {
    if (c.dims[k] <= 0) return true;  // nothing to copy
    total *= c.dims[k];
    if (total >= kLimit / 2) return false;  // room for the grid-stride loop's last step
    const int64_t s = (c.dims[k] - 1) * c.src_strides[k], d = (c.dims[k] - 1) * c.dst_strides[k];
    (s > 0 ? src_hi : src_lo) += s;
    (d > 0 ? dst_hi : dst_lo) += d;
  }
  return src_hi < kLimit && dst_hi < kLimit && src_lo > -kLimit && dst_lo > -kLimit;
}

bool fits_32bit_index(const ResizeParams& p) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  int64_t in = 1, out = 1;
  for (int d = 0; d < p.rank; ++d) {
    in *= std::max<int64_t>(p.in_dims[d], 1), out *= std::max<int64_t>(p.out_dims[d], 1);
    if (in >= kLimit || out >= kLimit / 2) return false;  // room for the grid-stride loop's last step
  }
  return true;
}

std::optional<InterleaveCopy> as_interleave(const StridedCopy& c, int64_t max_k) {
  if (c.rank != 2 && c.rank != 3) return std::nullopt;
  const int at = c.rank - 2;  // the pixel dimension; the channels follow it
  const int64_t p = c.dims[at], k = c.dims[at + 1];
  if (k < 2 || k > max_k || p < 1) return std::nullopt;
  if (c.src_strides[at] != 1 || c.dst_strides[at] != k || c.src_strides[at + 1] != p || c.dst_strides[at + 1] != 1) return std::nullopt;
  InterleaveCopy r;
  if (c.rank == 3) {
    if (c.src_strides[0] != k * p || c.dst_strides[0] != k * p) return std::nullopt;
    r.n = c.dims[0];
  }
  r.p = p, r.k = k, r.src_offset = c.src_offset, r.dst_offset = c.dst_offset;
  return r;
}

std::optional<ResizeParams> widen_resize(const ResizeParams& p, size_t elem_bytes, size_t vector_bytes, uintptr_t x, uintptr_t y) {
  const auto per = elements_per_vector(elem_bytes, vector_bytes, x, y);
  if (!per || p.rank < 1) return std::nullopt;
  const int64_t v = *per;
  const int in = p.rank - 1;
  if (p.in_dims[in] != p.out_dims[in] || p.in_dims[in] % v) return std::nullopt;
  ResizeParams w = p;
  w.in_dims[in] = w.out_dims[in] = p.in_dims[in] / v;
  return w;
}

}  // namespace sd::native::cuda
