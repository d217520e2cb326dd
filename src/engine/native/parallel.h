// Splits a loop over the context's threads with OpenMP: the same runtime oneDNN (Debian's build)
// uses, so engine kernels and oneDNN primitives share one set of threads per calling thread and
// never oversubscribe each other. Each pipeline worker sets its own budget (ExecContext::threads).
#pragma once

#include <algorithm>
#include <cstdint>

namespace sd::native {

// fn(begin, end) over [0, n) in contiguous chunks; runs inline when one thread or little work.
// min_chunk: the least work worth a thread (in loop iterations).
template <class Fn>
void parallel_for(int64_t n, int threads, int64_t min_chunk, Fn&& fn) {
  if (n <= 0) return;
  int64_t max_parts = std::max<int64_t>(1, n / std::max<int64_t>(1, min_chunk));
  int parts = static_cast<int>(std::min<int64_t>(threads, max_parts));
  if (parts <= 1) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel for num_threads(parts) schedule(static)
  for (int p = 0; p < parts; ++p) {
    int64_t begin = n * p / parts, end = n * (p + 1) / parts;
    fn(begin, end);
  }
}

}  // namespace sd::native
