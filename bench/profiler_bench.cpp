// What the always-on profiler costs per frame: everything the pipeline records for one frame
// (a ScopedStage per stage with its NVTX range, the waiting/blocked clock reads around each queue
// operation, items in, the frame's latency), without and with trace spans. Compare with the time
// a frame takes anyway (an inference of even the bundled tiny model takes milliseconds): see
// docs/benchmarks.md "Profiler overhead".
//
// Run: ./build/bench/streamdet_bench --benchmark_filter=Profiler
#include <benchmark/benchmark.h>

#include "runtime/profiler.h"

namespace sd {
namespace {

void record_one_frame(StageRecorder& rec, int64_t frame) {
  for (int s = 0; s < kStageCount; ++s) {
    Stage stage = static_cast<Stage>(s);
    auto wait_begin = Clock::now();  // pop from the input queue
    rec.add_wait(stage, std::chrono::duration<double, std::milli>(Clock::now() - wait_begin).count());
    rec.add_items_in(stage, 1);
    { ScopedStage scope(rec, stage, 1, 0, frame); benchmark::ClobberMemory(); }
    auto push_begin = Clock::now();  // push to the output queue
    rec.add_blocked(stage, std::chrono::duration<double, std::milli>(Clock::now() - push_begin).count());
  }
  rec.add_frame_latency(12.5 + static_cast<double>(frame % 100) * 0.1);
}

void BM_ProfilerPerFrame(benchmark::State& state) {
  const bool trace = state.range(0) != 0;
  Profiler profiler(trace, 16u << 20);  // room for every span of the run
  StageRecorder& rec = profiler.make_recorder("bench");
  int64_t frame = 0;
  for (auto _ : state) {
    record_one_frame(rec, frame++);
  }
  state.SetLabel(trace ? "with --trace" : "default");
}
BENCHMARK(BM_ProfilerPerFrame)->Arg(0)->Arg(1);

// The bare clock: six stages need at least 6 x 6 steady_clock reads per frame as recorded above.
void BM_SteadyClockNow(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(Clock::now());
}
BENCHMARK(BM_SteadyClockNow);

// The thread's CPU clock: each stage reads it twice a frame for its own CPU time (a system call,
// unlike the steady clock's vDSO read).
void BM_ThreadCpuClock(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(thread_cpu_ms());
}
BENCHMARK(BM_ThreadCpuClock);

}  // namespace
}  // namespace sd
