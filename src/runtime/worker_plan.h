// How many inference workers the pipeline runs and how many threads each gets.
//
// Why workers by default on CPUs: the native engine parallelizes inside one call with OpenMP
// (fork-join, ~100 parallel regions per inference of a small detector). When another stage of
// the pipeline (decoding, preprocessing, drawing, encoding) takes one of those threads' cores,
// the region waits at its barrier for the preempted thread. Measured on 2 cores with the bundled
// sample (docs/benchmarks.md, "Pipeline: workers and threads"): one 2-thread context ran the tiny
// model at 130 FPS end to end, two 1-thread workers at 594; YOLOv8n 23.5 against 31.2 FPS. For
// live sources, where each frame should finish fast, one worker with all the threads keeps the
// latency tail lower (p99 1.68 against 2.04 inference times), so it stays the default there.
#pragma once

#include <string>

#include "core/error.h"

namespace sd {

struct WorkerPlan {
  int workers = 1;
  int threads_per_worker = 1;
  bool operator==(const WorkerPlan&) const = default;
};

// requested_workers: --workers (0: auto); requested_threads: --threads (0: all cores), the
// inference threads in all; engine: the resolved engine name; live: a source is live.
// Auto on the native CPU engine with no live source: up to kMaxAutoWorkers one-thread-or-more
// workers sharing the threads; otherwise one worker with all of them. Given workers divide the
// threads (at least one each).
WorkerPlan plan_workers(int requested_workers, int requested_threads, int cores, const std::string& engine, bool live);

inline constexpr int kMaxAutoWorkers = 4;  // beyond this, more in-flight frames and arenas for little gain

// Hard limits of the options (whatever the machine), and the most threads per core a plan may
// run: beyond a few, OpenMP's barriers wait on preempted threads and throughput collapses
// (--threads 10000 ran no frame in 90 s on 2 cores).
inline constexpr int kMaxThreads = 1024;
inline constexpr int kMaxWorkers = 64;
inline constexpr int kMaxBatch = 256;
inline constexpr int kMaxThreadsPerCore = 4;

// kUsage naming the options when the plan's threads (workers x threads each) exceed
// kMaxThreadsPerCore x cores.
Status check_thread_budget(const WorkerPlan& plan, int cores);

}  // namespace sd
