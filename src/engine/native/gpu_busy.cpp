#include "engine/native/gpu_busy.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>

namespace sd::native {

std::optional<GpuBusySummary> summarize_gpu_busy(std::span<const GpuReading> readings) {
  if (readings.empty()) return std::nullopt;
  GpuBusySummary s;
  s.samples = static_cast<int>(readings.size());
  double gpu = 0, mem = 0;
  for (const GpuReading& r : readings) {
    gpu += std::min(r.gpu_percent, 100u);
    mem += std::min(r.memory_percent, 100u);
    s.memory_used_max_bytes = std::max(s.memory_used_max_bytes, r.memory_used_bytes);
    s.memory_total_bytes = std::max(s.memory_total_bytes, r.memory_total_bytes);
  }
  s.busy_ratio = gpu / 100.0 / s.samples;
  s.memory_busy_ratio = mem / 100.0 / s.samples;
  return s;
}

std::string gpu_busy_sentence(const GpuBusySummary& s) {
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2f", s.busy_ratio);
  std::string out = std::string("GPU busy ") + ratio + " of the run: ";
  out += s.busy_ratio >= kGpuBoundBusyRatio ? "the GPU is the bottleneck" : "the host side is the bottleneck (the GPU waits for it)";
  return out;
}

// NVML's C API, declared here (its ABI is stable since the _v2 entry points of CUDA 5; no nvml.h
// needed to build): opaque device handles, return codes, two plain structs.
namespace {
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
}  // namespace

struct NvmlLibrary::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  std::string name(nvmlReturn_t r) const {
    const char* s = error_string ? error_string(r) : nullptr;
    return (s ? std::string(s) : std::string("error")) + " (" + std::to_string(r) + ")";
  }
};

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::open(const std::string& path) {
  const std::string what = "GPU busy share not available: cannot use " + path + " (the NVIDIA driver's management library; ";
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary);
  lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) {
    const char* e = dlerror();
    return fail(ErrorCode::kUnsupported, what + (e ? e : "dlopen failed") + ")");
  }
  lib->api_ = std::make_unique<Api>();
  Api& a = *lib->api_;
  const std::pair<const char*, void**> symbols[] = {
      {"nvmlInit_v2", reinterpret_cast<void**>(&a.init)},
      {"nvmlShutdown", reinterpret_cast<void**>(&a.shutdown)},
      {"nvmlErrorString", reinterpret_cast<void**>(&a.error_string)},
      {"nvmlDeviceGetHandleByIndex_v2", reinterpret_cast<void**>(&a.handle_by_index)},
      {"nvmlDeviceGetUtilizationRates", reinterpret_cast<void**>(&a.utilization)},
      {"nvmlDeviceGetMemoryInfo", reinterpret_cast<void**>(&a.memory)},
  };
  for (const auto& [name, slot] : symbols) {
    *slot = dlsym(lib->handle_, name);
    if (!*slot) {
      a.init = nullptr;  // nothing to shut down
      return fail(ErrorCode::kUnsupported, what + "no " + name + ")");
    }
  }
  if (const nvmlReturn_t r = a.init(); r != 0) {
    a.init = nullptr;
    return fail(ErrorCode::kUnsupported, what + "nvmlInit_v2 failed: " + a.name(r) + ")");
  }
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (api_ && api_->init && api_->shutdown) api_->shutdown();
  if (handle_) dlclose(handle_);
}

namespace {
struct SharedNvml {
  std::unique_ptr<NvmlLibrary> lib;
  std::string problem;
};
const SharedNvml& shared_nvml() {
  static const SharedNvml s = [] {
    SharedNvml out;
    auto lib = NvmlLibrary::open("libnvidia-ml.so.1");
    if (lib) out.lib = std::move(*lib);
    else out.problem = lib.error().message;
    return out;
  }();
  return s;
}
}  // namespace

const NvmlLibrary* NvmlLibrary::shared() { return shared_nvml().lib.get(); }
std::string NvmlLibrary::shared_problem() { return shared_nvml().problem; }

Result<GpuReading> NvmlLibrary::read(unsigned index) const {
  const Api& a = *api_;
  nvmlDevice_t dev = nullptr;
  if (const nvmlReturn_t r = a.handle_by_index(index, &dev); r != 0)
    return fail(ErrorCode::kUnsupported, "NVML nvmlDeviceGetHandleByIndex_v2(" + std::to_string(index) + ") failed: " + a.name(r));
  nvmlUtilization_t u{};
  if (const nvmlReturn_t r = a.utilization(dev, &u); r != 0)
    return fail(ErrorCode::kUnsupported, "NVML nvmlDeviceGetUtilizationRates failed: " + a.name(r));
  nvmlMemory_t m{};
  if (const nvmlReturn_t r = a.memory(dev, &m); r != 0) return fail(ErrorCode::kUnsupported, "NVML nvmlDeviceGetMemoryInfo failed: " + a.name(r));
  return GpuReading{u.gpu, u.memory, m.used, m.total};
}

Result<std::unique_ptr<GpuBusySampler>> GpuBusySampler::start_nvml(unsigned index, std::chrono::milliseconds period) {
  const NvmlLibrary* lib = NvmlLibrary::shared();
  if (!lib) return fail(ErrorCode::kUnsupported, NvmlLibrary::shared_problem());
  // One reading first: a GPU NVML does not know fails here, not silently in the thread.
  if (auto r = lib->read(index); !r) return tl::unexpected(r.error());
  return start([lib, index] { return lib->read(index); }, period);
}

std::unique_ptr<GpuBusySampler> GpuBusySampler::start(ReadFn read, std::chrono::milliseconds period) {
  std::unique_ptr<GpuBusySampler> s(new GpuBusySampler);
  s->read_ = std::move(read);
  s->thread_ = std::thread([p = s.get(), period] { p->loop(period); });
  return s;
}

void GpuBusySampler::loop(std::chrono::milliseconds period) {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    lock.unlock();
    auto r = read_();
    lock.lock();
    if (!r) {
      error_ = r.error().message;
      return;
    }
    readings_.push_back(*r);
    wake_.wait_for(lock, period, [this] { return stop_; });
  }
}

std::optional<GpuBusySummary> GpuBusySampler::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  return so_far();
}

std::optional<GpuBusySummary> GpuBusySampler::so_far() const {
  std::lock_guard lock(mutex_);
  return summarize_gpu_busy(readings_);
}

std::string GpuBusySampler::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

GpuBusySampler::~GpuBusySampler() { stop(); }

}  // namespace sd::native
