#include "runtime/worker_plan.h"

#include <algorithm>

namespace sd {

WorkerPlan plan_workers(int requested_workers, int requested_threads, int cores, const std::string& engine, bool live) {
  const int threads = std::max(1, requested_threads > 0 ? requested_threads : cores);
  WorkerPlan plan;
  if (requested_workers > 0) plan.workers = requested_workers;
  else if (engine == "native" && !live) plan.workers = std::min(threads, kMaxAutoWorkers);
  else plan.workers = 1;
  plan.threads_per_worker = std::max(1, threads / plan.workers);
  return plan;
}

}  // namespace sd
