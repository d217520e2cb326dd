#include "engine/native/cpu/thread_floats.h"

#include <cstdlib>
#include <memory>

namespace sd::native::ops {

float* thread_floats(size_t floats) {
  struct Freer {
    void operator()(float* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<float, Freer> buf;
  thread_local size_t have = 0;
  if (have < floats) {
    buf.reset(static_cast<float*>(std::aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64)));
    if (!buf) std::abort();  // out of memory for a few hundred KiB: nothing sensible to do
    have = floats;
  }
  return buf.get();
}

}  // namespace sd::native::ops
