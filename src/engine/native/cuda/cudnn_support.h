// What both cuDNN convolution engines share (the legacy API's, cudnn_conv.cpp, and the backend
// graph API's, cudnn_graph_conv.cpp): the process's cuDNN handle per device, and the device
// memory their plan-time probes and timings use.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/native/cuda/conv.h"
#include "engine/native/host_tensor.h"
#include "engine/native/cuda/cudnn_library.h"

namespace sd::native::cuda {

// One cuDNN handle per device for the whole process, shared by every node's kernel: a handle is
// costly (it allocates on the device), and a kernel's calls on it are short (set the stream,
// enqueue), so they take turns under its mutex. Never destroyed: destroying at exit would race the
// CUDA runtime's own teardown.
struct SharedHandle {
  cudnnHandle_t handle = nullptr;
  std::mutex mutex;
};

// The current device's handle, made on first use.
Result<SharedHandle*> shared_handle(const CudnnLibrary& lib);

// A map kept for the process's life behind its mutex, one per value type (the graph engine's
// plans, the engine choices): never destroyed, as the handles, since what it holds refers to
// cuDNN objects that must not be destroyed during the process's exit.
template <class T>
struct ProcessCache {
  std::mutex mutex;
  std::map<std::string, T> entries;
};
template <class T>
ProcessCache<T>& process_cache() {
  static auto* cache = new ProcessCache<T>;
  return *cache;
}

// cudaMalloc'd memory, freed with it.
struct DeviceMemory {
  void* p = nullptr;
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory();
};

// Float values into device memory as the kernel stores them: float32, or fp16 (rounded to
// nearest even on the host, as the planner converts constants).
Status upload(DeviceMemory& m, std::span<const float> host, bool half);
// n elements of device memory in either storage, as floats on the host.
Status download(std::vector<float>& host, const void* device, size_t n, bool half);

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// count values uniform in [-1, 1).
std::vector<float> random_values(size_t count, std::mt19937& rng);

// The node on the direct kernel (conv.cu), for a run whose tensors are views cuDNN's alignment
// promise does not cover: inputs x, w[, bias][, sum] and output y in the node's storage type.
Status run_direct(const ConvParams& p, bool half, bool bias, bool sum, std::span<const TensorRef> in, std::span<const TensorRef> out,
                  void* stream);

// The device buffers of a probe, in the node's storage type: the fast path reads x, w (in its
// filter layout), bias and sum (nullptr when the node has none) and writes y, with `workspace`.
struct ProbeBuffers {
  const void* x;
  const void* w;
  const void* bias;
  const void* sum;
  void* y;
  void* workspace;
};

// Random input, weights, bias and residual (fixed seed) through `fast` and through the direct
// kernel (conv.cu) at p's geometry, both outputs poisoned first (all bits set: NaN in fp32 and
// fp16) so that an element a path leaves unwritten fails; compared with
// cudnn_probe_disagreement at the storage type's tolerance. w_dims: the filter's [k, c/g, kh, kw];
// filter_ohwi: `fast` reads the weights in cuDNN's NHWC filter layout. Returns "" when they
// agree, else the disagreement; errors: a CUDA call or `fast` failed.
Result<std::string> probe_against_direct(const ConvParams& p, bool half, bool bias, bool sum, const std::array<int, 4>& w_dims,
                                         bool filter_ohwi, size_t workspace, const std::function<Status(const ProbeBuffers&)>& fast);

}  // namespace sd::native::cuda
