// The GPU's busy share in what a user reads (issue 22, item 6): the profile's verdict, table and
// JSON, and /metrics, from injected figures; and the run's sampler where NVML is missing (here).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/live_stats.h"
#include "runtime/profiler.h"
#include "serve/metrics_text.h"

namespace sd {
namespace {

ProfileReport inference_bound_report() {
  ProfileReport r;
  r.wall_ms = 1000;
  r.frames = 100;
  r.cpu_ms = 1200;
  r.cores = 4;
  r.machine_busy_ms = 1300;
  for (auto [name, busy] : {std::pair<const char*, double>{"read", 200}, {"inference", 950}}) {
    StageReport s;
    s.name = name;
    s.threads = 1;
    s.hits = 100;
    s.total_ms = busy;
    s.per_hit_ms = busy / 100;
    s.utilization = busy / r.wall_ms;
    r.stages.push_back(s);
  }
  return r;
}

TEST(GpuBusyProfile, TheVerdictSaysTheGpusBusyShareAndWhichSideLimits) {
  ProfileReport r = inference_bound_report();
  EXPECT_EQ(bottleneck_verdict(r), "inference-bound: 9.50 ms a call (1 worker, 95% busy)");  // no GPU: unchanged
  r.gpu_busy = 0.43;
  EXPECT_EQ(bottleneck_verdict(r),
            "inference-bound: 9.50 ms a call (1 worker, 95% busy); GPU busy 0.43 of the run: the host side is the bottleneck (the GPU "
            "waits for it)");
  r.gpu_busy = 0.97;
  EXPECT_NE(bottleneck_verdict(r).find("; GPU busy 0.97 of the run: the GPU is the bottleneck"), std::string::npos);
}

TEST(GpuBusyProfile, TheTableAndTheJsonCarryTheFiguresOrWhyTheyAreMissing) {
  ProfileReport r = inference_bound_report();
  nlohmann::json j = profile_to_json(r);
  EXPECT_TRUE(j.contains("gpu_busy") && j["gpu_busy"].is_null());
  EXPECT_FALSE(j.contains("gpu_busy_note"));
  EXPECT_EQ(format_profile(r).find("gpu:"), std::string::npos);

  r.gpu_busy = 0.43, r.gpu_memory_busy = 0.2, r.gpu_memory_used_mb = 812, r.gpu_busy_samples = 37;
  r.verdict = bottleneck_verdict(r);
  j = profile_to_json(r);
  EXPECT_DOUBLE_EQ(j["gpu_busy"].get<double>(), 0.43);
  EXPECT_DOUBLE_EQ(j["gpu_memory_used_mb"].get<double>(), 812);
  EXPECT_EQ(j["gpu_busy_samples"].get<int>(), 37);
  const std::string table = format_profile(r);
  EXPECT_NE(table.find("gpu: busy 0.43 of the run (37 samples), memory busy 0.20, memory used at most 812 MiB\n"), std::string::npos) << table;
  EXPECT_NE(table.find("GPU busy 0.43 of the run: the host side is the bottleneck"), std::string::npos);

  ProfileReport missing = inference_bound_report();
  missing.gpu_busy_note = "GPU busy share not available: cannot use libnvidia-ml.so.1 (...)";
  j = profile_to_json(missing);
  EXPECT_TRUE(j["gpu_busy"].is_null());
  EXPECT_EQ(j["gpu_busy_note"], missing.gpu_busy_note);
  EXPECT_NE(format_profile(missing).find("gpu: busy share not measured: GPU busy share not available"), std::string::npos);
}

TEST(GpuBusyProfile, WithoutNvmlARunOnTheGpuSaysWhyAndHasNoFigures) {
  if (native::NvmlLibrary::shared()) GTEST_SKIP() << "NVML is present here";
  Profiler p;
  p.watch_gpu(0);
  p.start();
  EXPECT_NE(p.gpu_busy_problem().find("libnvidia-ml.so.1"), std::string::npos) << p.gpu_busy_problem();
  EXPECT_EQ(p.live_gpu_busy(), -1);
  p.stop();
  const ProfileReport r = p.report();
  EXPECT_EQ(r.gpu_busy, -1);
  EXPECT_EQ(r.gpu_busy_note, p.gpu_busy_problem());
}

TEST(GpuBusyProfile, ARunOnTheCpuAsksNothingOfNvml) {
  Profiler p;
  p.start();
  p.stop();
  EXPECT_EQ(p.gpu_busy_problem(), "");
  EXPECT_EQ(p.report().gpu_busy_note, "");
}

TEST(GpuBusyProfile, MetricsHaveTheBusyRatioOnlyWhereItIsMeasured) {
  LiveStats stats;
  EXPECT_EQ(prometheus_text(stats).find("streamdet_gpu_busy_ratio"), std::string::npos);
  stats.gpu_busy = 0.5;
  const std::string text = prometheus_text(stats);
  EXPECT_NE(text.find("# TYPE streamdet_gpu_busy_ratio gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nstreamdet_gpu_busy_ratio 0.5\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace sd
