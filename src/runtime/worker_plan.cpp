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

Status check_thread_budget(const WorkerPlan& plan, int cores) {
  const int64_t total = static_cast<int64_t>(plan.workers) * plan.threads_per_worker;
  const int64_t most = static_cast<int64_t>(kMaxThreadsPerCore) * std::max(1, cores);
  if (total <= most) return ok();
  return fail(ErrorCode::kUsage, "--threads/--workers: " + std::to_string(plan.workers) + " worker" + (plan.workers == 1 ? "" : "s") +
                                     " x " + std::to_string(plan.threads_per_worker) + " thread" +
                                     (plan.threads_per_worker == 1 ? "" : "s") + " is more than " + std::to_string(kMaxThreadsPerCore) +
                                     " threads for each of this machine's " + std::to_string(cores) + " cores (at most " +
                                     std::to_string(most) + ")");
}

}  // namespace sd
