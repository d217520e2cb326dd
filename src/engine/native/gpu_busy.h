// The GPU's busy share during a run (issue 22, item 6: "the profile's verdict showing the GPU's
// busy share"), from NVML (the NVIDIA driver's management library), loaded at run time with
// dlopen: streamdet has no link-time dependency on it and starts where it is missing; the figures
// are then absent and the reason is said once by whoever asked for them.
//
// NVML's utilization is the share of its last sample period (1/6 s to 1 s, by GPU) in which at
// least one kernel ran: a sampler polling every 100 ms averages it over the run. "busy" is not
// "saturated": one small kernel at a time counts as busy too. It is the question the verdict
// needs answered, though: when the GPU is idle most of the run, the host side is the bottleneck.
// Plain C++ (no CUDA headers): compiled in every build.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"

namespace sd::native {

// One reading of one GPU.
struct GpuReading {
  unsigned gpu_percent = 0;     // nvmlUtilization_t::gpu: time a kernel ran, in % of the sample period
  unsigned memory_percent = 0;  // nvmlUtilization_t::memory: time device memory was read or written
  uint64_t memory_used_bytes = 0, memory_total_bytes = 0;
};

// A run's readings, summarized. busy_ratio 0..1: the mean of gpu_percent / 100.
struct GpuBusySummary {
  int samples = 0;
  double busy_ratio = 0, memory_busy_ratio = 0;
  uint64_t memory_used_max_bytes = 0, memory_total_bytes = 0;
};

// nullopt without readings.
std::optional<GpuBusySummary> summarize_gpu_busy(std::span<const GpuReading> readings);

// Below this busy share the GPU waits for the host: the host side is the bottleneck.
inline constexpr double kGpuBoundBusyRatio = 0.8;

// The verdict's sentence: "GPU busy 0.43 of the run: the host side is the bottleneck (the GPU
// waits for frames)" or "GPU busy 0.91 of the run: the GPU is the bottleneck".
std::string gpu_busy_sentence(const GpuBusySummary& s);

// NVML's entry points, resolved once per process.
class NvmlLibrary {
 public:
  // Opens `path` ("libnvidia-ml.so.1") and nvmlInit_v2: one line naming the library and why it
  // cannot be used otherwise.
  static Result<std::unique_ptr<NvmlLibrary>> open(const std::string& path);
  // The process's (libnvidia-ml.so.1), opened on first use; nullptr where it cannot be, and then
  // shared_problem() says why.
  static const NvmlLibrary* shared();
  static std::string shared_problem();
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // GPU `index` in NVML's order (the PCI order; CUDA's default order is "fastest first", which is
  // the same on a machine with one GPU or identical ones).
  Result<GpuReading> read(unsigned index) const;

 private:
  NvmlLibrary() = default;
  struct Api;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
};

// Polls a reading every `period` on a thread of its own from start to stop(). A failing reading
// ends the polling (kept: the summary of what was read, and the error).
class GpuBusySampler {
 public:
  using ReadFn = std::function<Result<GpuReading>()>;
  // NVML's GPU `index`: an error naming why where NVML cannot be used (no sampler then).
  static Result<std::unique_ptr<GpuBusySampler>> start_nvml(unsigned index, std::chrono::milliseconds period = std::chrono::milliseconds(100));
  // Any reading (the tests inject theirs).
  static std::unique_ptr<GpuBusySampler> start(ReadFn read, std::chrono::milliseconds period);
  ~GpuBusySampler();
  GpuBusySampler(const GpuBusySampler&) = delete;
  GpuBusySampler& operator=(const GpuBusySampler&) = delete;

  // Stops polling (idempotent); the summary of every reading taken, nullopt without one.
  std::optional<GpuBusySummary> stop();
  // The summary so far, while it runs (for /metrics).
  std::optional<GpuBusySummary> so_far() const;
  // The reading's error that ended the polling, "" when none.
  std::string error() const;

 private:
  GpuBusySampler() = default;
  void loop(std::chrono::milliseconds period);
  ReadFn read_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<GpuReading> readings_;
  std::string error_;
  bool stop_ = false;  // under mutex_
  std::thread thread_;
};

}  // namespace sd::native
