#include "engine/native/cpu/weight_cache.h"

#include <omp.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "engine/native/cpu/dnnl_context.h"

namespace sd::native::dnnl_ops {

namespace {

struct Entry {
  const void* source = nullptr;
  std::weak_ptr<const unsigned char> source_owner;  // expired: the address may have been reused
  dnnl::memory::desc user_md, target;
  std::weak_ptr<const dnnl::memory> reordered;
};

std::mutex cache_mutex;
std::vector<Entry> cache;  // a model has ~100 weight tensors: a linear scan is plenty
std::atomic<size_t> reorders{0};

}  // namespace

std::shared_ptr<const dnnl::memory> shared_weights(const HostTensor& weights, const dnnl::memory::desc& user_md,
                                                   const dnnl::memory::desc& target) {
  std::unique_lock lock(cache_mutex);
  std::erase_if(cache, [](const Entry& e) { return e.reordered.expired() || e.source_owner.expired(); });
  for (const Entry& e : cache)
    if (e.source == weights.data() && e.user_md == user_md && e.target == target)
      if (auto alive = e.reordered.lock()) return alive;
  // Reorder under the lock: two workers planning at once would otherwise both do it.
  auto& eng = cpu_engine();
  dnnl::memory user(user_md, eng, const_cast<void*>(weights.data()));
  auto out = std::make_shared<dnnl::memory>(target, eng);
  // A one-off at plan time (Winograd's weight transform is the slow part of planning): use
  // every core, whatever this session's own budget.
  const int budget = omp_get_max_threads();
  omp_set_num_threads(omp_get_num_procs());
  dnnl::stream s(eng);
  dnnl::reorder(user, *out).execute(s, user, *out);
  s.wait();
  omp_set_num_threads(budget);
  ++reorders;
  cache.push_back({weights.data(), weights.storage(), user_md, target, out});
  return out;
}

size_t weight_reorders_done() { return reorders.load(); }

}  // namespace sd::native::dnnl_ops
