// Allocation of the engine's large buffers (weights, the activation arena, kernel scratch).
// Large blocks are aligned to 2 MiB and advised as transparent huge pages: on the virtual
// machines we run on, first-touch page faults of 4 KiB pages cost several microseconds each
// (a YOLOv8n load touched ~29k pages: about half of its load time), and huge pages also
// cut TLB misses when a conv streams through the arena.
#pragma once
#include <cstddef>
#include <memory>

namespace sd::native {

struct FreeDeleter {
  void operator()(unsigned char* p) const;
};
using AlignedBytes = std::unique_ptr<unsigned char[], FreeDeleter>;

// At least `bytes` (and at least one cache line), 64-byte aligned, not initialised; null if
// the allocation fails.
AlignedBytes allocate_aligned(size_t bytes);

}  // namespace sd::native
