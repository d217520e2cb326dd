#include "engine/native/aligned_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>

namespace sd::native {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
// Below this a huge page would waste more than it saves.
constexpr size_t kHugeThreshold = size_t{4} << 20;
}  // namespace

void FreeDeleter::operator()(unsigned char* p) const { std::free(p); }

AlignedBytes allocate_aligned(size_t bytes) {
  bytes = std::max<size_t>(bytes, 64);
  if (bytes >= kHugeThreshold) {
    const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    auto* p = static_cast<unsigned char*>(std::aligned_alloc(kHugePage, rounded));
    if (p) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: ignored where THP is off
    return AlignedBytes(p);
  }
  return AlignedBytes(static_cast<unsigned char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
}

}  // namespace sd::native
