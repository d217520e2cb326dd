// The CUDA backend: device memory from cudaMalloc (at plan time and when a session's arena grows,
// never per run), page-locked host staging from cudaHostAlloc (likewise), copies with
// cudaMemcpyAsync on the session's stream, one non-blocking stream per session, end_run waiting
// for it, and runs recorded as CUDA graphs (stream capture) and replayed with cudaGraphLaunch.
// No event is created anywhere. Kernels: cuda_ops.h.
#include "engine/native/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>

#include "engine/native/cuda/cuda_check.h"
#include "engine/native/cuda/cuda_ops.h"
#include "engine/native/cuda/cudnn_engine_choice.h"
#include "engine/native/cuda/cudnn_library.h"
#include "engine/native/cuda/elementwise.h"

namespace sd::native {
namespace cuda {

DType float_io(const OpContext& ctx, size_t data_inputs) {
  DType t = DType::kUndefined;
  auto same = [&t](DType d) {
    if (d != DType::kFloat32 && d != DType::kFloat16) return false;
    if (t == DType::kUndefined) t = d;
    return d == t;
  };
  for (size_t i = 0; i < data_inputs && i < ctx.inputs.size(); ++i)
    if (!same(ctx.inputs[i].dtype)) return DType::kUndefined;
  for (const auto& o : ctx.outputs)
    if (o.dtype != DType::kUndefined && !same(o.dtype)) return DType::kUndefined;
  return t == DType::kUndefined ? DType::kFloat32 : t;
}

const CudaOpTable& cuda_ops() {
  static const CudaOpTable table = [] {
    CudaOpTable t;
    register_elementwise_ops(t);
    register_conv_ops(t);
    register_data_ops(t);
    return t;
  }();
  return table;
}

namespace {

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

class CudaStream final : public BackendStream {
 public:
  CudaStream(cudaStream_t s, int threads) : stream_(s), threads_(threads) {}
  ~CudaStream() override { cudaStreamDestroy(stream_); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  int threads() const override { return threads_; }
  void* native_handle() const override { return stream_; }
  cudaStream_t stream() const { return stream_; }
  // While a run is recorded (begin_capture .. end_capture): the copies queued, which its graph
  // queues on every replay (the copies counter counts per run either way).
  bool capturing = false;
  uint64_t captured_copies = 0;

 private:
  cudaStream_t stream_;
  int threads_;  // the CPU threads of the host side (kernels on the CPU never see this stream)
};

// An instantiated graph (the recorded cudaGraph_t is destroyed once instantiated).
class CudaGraph final : public BackendGraph {
 public:
  CudaGraph(cudaGraphExec_t exec, uint64_t copies) : exec_(exec), copies_(copies) {}
  ~CudaGraph() override { cudaGraphExecDestroy(exec_); }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  cudaGraphExec_t exec() const { return exec_; }
  uint64_t copies() const { return copies_; }

 private:
  cudaGraphExec_t exec_;
  uint64_t copies_;
};

std::string cuda_error_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")"; }

class CudaBackend final : public Backend {
 public:
  CudaBackend(int index, const cudaDeviceProp& prop) : index_(index), prop_(prop) {}

  std::string name() const override { return "cuda:" + std::to_string(index_); }
  Device device() const override { return Device{DeviceKind::kCuda, index_}; }
  std::string description() const override {
    char mem[32];
    std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(prop_.totalGlobalMem) / (1u << 30));
    return name() + " " + prop_.name + " (sm_" + std::to_string(prop_.major) + std::to_string(prop_.minor) + ", " +
           std::to_string(prop_.multiProcessorCount) + " SMs, " + mem + ")";
  }

  bool supports(const OpContext& ctx) const override {
    auto it = cuda_ops().find(ctx.node.op_type);
    return it != cuda_ops().end() && it->second.supports(ctx);
  }
  std::vector<std::string> op_types() const override {
    std::vector<std::string> names;
    for (const auto& [name, op] : cuda_ops()) names.push_back(name);
    return names;
  }
  Result<std::unique_ptr<Kernel>> create_kernel(const OpContext& ctx) const override {
    auto it = cuda_ops().find(ctx.node.op_type);
    if (it == cuda_ops().end()) return fail(ErrorCode::kUnsupported, ctx.describe() + ": not supported by " + name());
    SD_CUDA_TRY(cudaSetDevice(index_));
    return it->second.create(ctx);
  }
  Layout preferred_layout() const override { return Layout::kNhwc; }
  // With --precision fp16 (PlanOptions::device_fp16) its float tensors are fp16.
  DType preferred_float() const override { return DType::kFloat16; }
  BackendCounters counters() const override {
    return {allocations_.load(), frees_.load(), streams_.load(), copies_.load(), host_allocations_.load(), graph_captures_.load(),
            graph_launches_.load()};
  }

  Result<DeviceBuffer> allocate(size_t bytes) const override {
    SD_CUDA_TRY(cudaSetDevice(index_));
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, std::max<size_t>(bytes, 256));
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky: clear it
      size_t free_bytes = 0, total = 0;
      cudaMemGetInfo(&free_bytes, &total);
      return fail(ErrorCode::kModel, name() + ": out of GPU memory allocating " + std::to_string(bytes >> 20) + " MiB (" +
                                         std::to_string(free_bytes >> 20) + " MiB free of " + std::to_string(total >> 20) + ")");
    }
    SD_CUDA_TRY(e);
    ++allocations_;
    return DeviceBuffer(this, p, bytes);
  }

  Status copy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes, BackendStream* stream) const override {
    for (Device d : {dst_device, src_device})
      if (!d.is_host() && d != device()) return fail(ErrorCode::kInternal, name() + " cannot copy " + src_device.str() + " -> " + dst_device.str());
    if (bytes == 0) return ok();
    if (stream && static_cast<CudaStream*>(stream)->capturing) ++static_cast<CudaStream*>(stream)->captured_copies;
    else ++copies_;
    if (stream) {
      // From or to the session's page-locked staging (allocate_host) the copy is asynchronous: the
      // session waits for the stream (wait, end_run) before host code touches that memory. From
      // pageable memory the driver stages it (and a copy to pageable memory returns when done).
      SD_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream->native_handle())));
    } else {
      // Without a stream the copy must be done on return (backend.h): a plain cudaMemcpy from
      // pageable memory may return with the DMA still in flight, and the sessions' streams are
      // non-blocking (they do not wait for the legacy stream), so a first run could read
      // constants still being written. Wait for the legacy stream here, once per upload.
      SD_CUDA_TRY(cudaSetDevice(index_));
      SD_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
      SD_CUDA_TRY(cudaStreamSynchronize(cudaStreamLegacy));
    }
    return ok();
  }

  // float32 on the host <-> fp16 on the device: the float32 side is staged in the scratch (device
  // memory) by a plain copy on the stream, and a conversion kernel on the same stream writes the
  // other side, so the host only ever sees float32.
  size_t convert_scratch_bytes(size_t count) const override { return count * sizeof(float); }
  Status copy_convert(void* dst, DType dst_type, Device dst_device, const void* src, DType src_type, Device src_device, size_t count,
                      void* scratch, BackendStream* stream) const override {
    const bool up = src_type == DType::kFloat32 && dst_type == DType::kFloat16 && src_device.is_host() && dst_device == device();
    const bool down = src_type == DType::kFloat16 && dst_type == DType::kFloat32 && src_device == device() && dst_device.is_host();
    if (!up && !down)
      return fail(ErrorCode::kInternal, name() + " cannot copy " + src_device.str() + " " + dtype_name(src_type) + " -> " +
                                            dst_device.str() + " " + dtype_name(dst_type));
    if (count == 0) return ok();
    if (!scratch || !stream) return fail(ErrorCode::kInternal, name() + ": a converting copy needs the session's scratch and stream");
    // Counted as a plain copy is: per replay where a graph records it (the first GPU run showed
    // fp16 runs counting 2 copies for 5 runs, the recorded run's alone).
    if (static_cast<CudaStream*>(stream)->capturing) ++static_cast<CudaStream*>(stream)->captured_copies;
    else ++copies_;
    auto s = static_cast<cudaStream_t>(stream->native_handle());
    auto* staged = static_cast<float*>(scratch);
    if (up) {
      SD_CUDA_TRY(cudaMemcpyAsync(staged, src, count * sizeof(float), cudaMemcpyHostToDevice, s));
      SD_CUDA_TRY(static_cast<cudaError_t>(cuda::launch_float_to_half(staged, static_cast<__half*>(dst), static_cast<int64_t>(count), s)));
    } else {
      SD_CUDA_TRY(static_cast<cudaError_t>(cuda::launch_half_to_float(static_cast<const __half*>(src), staged, static_cast<int64_t>(count), s)));
      SD_CUDA_TRY(cudaMemcpyAsync(dst, staged, count * sizeof(float), cudaMemcpyDeviceToHost, s));
    }
    return ok();
  }

  Result<std::unique_ptr<BackendStream>> create_stream(int threads) const override {
    SD_CUDA_TRY(cudaSetDevice(index_));
    cudaStream_t s = nullptr;
    SD_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    ++streams_;
    return std::unique_ptr<BackendStream>(new CudaStream(s, threads));
  }
  Status begin_run(BackendStream&) const override {
    SD_CUDA_TRY(cudaSetDevice(index_));  // the calling thread's current device
    return ok();
  }
  Status end_run(BackendStream& stream) const override { return wait(stream); }
  Status wait(BackendStream& stream) const override {
    SD_CUDA_TRY(cudaStreamSynchronize(static_cast<cudaStream_t>(stream.native_handle())));
    return ok();
  }

  bool has_host_staging() const override { return true; }
  Result<DeviceBuffer> allocate_host(size_t bytes) const override {
    SD_CUDA_TRY(cudaSetDevice(index_));
    void* p = nullptr;
    const cudaError_t e = cudaHostAlloc(&p, std::max<size_t>(bytes, 256), cudaHostAllocPortable);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return fail(e == cudaErrorMemoryAllocation ? ErrorCode::kModel : ErrorCode::kInternal,
                  name() + ": cannot page-lock " + std::to_string(bytes >> 20) + " MiB of host memory: " + cuda_error_text(e));
    }
    {
      std::lock_guard lock(host_mutex_);
      host_.insert(p);
    }
    ++host_allocations_;
    return DeviceBuffer(this, p, bytes);
  }

  // Thread-local capture: a call that is not allowed while recording (a cudaMalloc, a synchronous
  // copy, a stream synchronization) fails on this thread and invalidates the recording, which
  // end_capture reports; other threads (other sessions) are not affected.
  bool can_capture() const override { return true; }
  Status begin_capture(BackendStream& stream) const override {
    auto& s = static_cast<CudaStream&>(stream);
    SD_CUDA_TRY(cudaStreamBeginCapture(s.stream(), cudaStreamCaptureModeThreadLocal));
    s.capturing = true;
    s.captured_copies = 0;
    return ok();
  }
  Result<std::unique_ptr<BackendGraph>> end_capture(BackendStream& stream) const override {
    auto& s = static_cast<CudaStream&>(stream);
    s.capturing = false;
    cudaGraph_t graph = nullptr;
    cudaError_t e = cudaStreamEndCapture(s.stream(), &graph);
    cudaGraphExec_t exec = nullptr;
    const char* call = "cudaStreamEndCapture";
    if (e == cudaSuccess && graph) {
      e = cudaGraphInstantiate(&exec, graph, 0);
      call = "cudaGraphInstantiate";
    }
    if (graph) cudaGraphDestroy(graph);
    if (e != cudaSuccess || !exec) {
      cudaGetLastError();  // capture errors are not sticky: clear it for the plain launches that follow
      return fail(ErrorCode::kInternal, std::string(call) + ": " + (e != cudaSuccess ? cuda_error_text(e) : "no graph"));
    }
    ++graph_captures_;
    return std::unique_ptr<BackendGraph>(new CudaGraph(exec, s.captured_copies));
  }
  Status replay(BackendGraph& graph, BackendStream& stream) const override {
    auto& g = static_cast<CudaGraph&>(graph);
    SD_CUDA_TRY(cudaGraphLaunch(g.exec(), static_cast<CudaStream&>(stream).stream()));
    ++graph_launches_;
    copies_ += g.copies();
    return ok();
  }

 private:
  void release(void* data, size_t) const noexcept override {
    bool host = false;
    {
      std::lock_guard lock(host_mutex_);
      host = host_.erase(data) > 0;
    }
    if (host) {
      cudaFreeHost(data);
      return;
    }
    cudaFree(data);
    ++frees_;
  }

  int index_;
  cudaDeviceProp prop_;
  mutable std::atomic<uint64_t> allocations_{0}, frees_{0}, streams_{0}, copies_{0};
  mutable std::atomic<uint64_t> host_allocations_{0}, graph_captures_{0}, graph_launches_{0};
  mutable std::mutex host_mutex_;
  mutable std::set<void*> host_;  // live page-locked allocations (release frees them with cudaFreeHost)
};

// Why the driver offers no usable device, in a user's words.
std::string device_problem(cudaError_t e) {
  switch (e) {
    case cudaErrorNoDevice: return "no CUDA GPU found";
    case cudaErrorInsufficientDriver: return "no NVIDIA driver, or one too old for CUDA " + version_text(CUDART_VERSION);
    default: return std::string("the CUDA driver is not usable: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  }
}

}  // namespace
}  // namespace cuda

Result<std::shared_ptr<const Backend>> cuda_backend(int index) {
  static std::mutex mutex;
  static std::map<int, std::shared_ptr<const Backend>> made;
  std::lock_guard lock(mutex);
  if (auto it = made.find(index); it != made.end()) return it->second;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return fail(ErrorCode::kUnsupported, "CUDA: " + cuda::device_problem(e));
  if (count == 0) return fail(ErrorCode::kUnsupported, "CUDA: no CUDA GPU found");
  if (index < 0 || index >= count)
    return fail(ErrorCode::kUnsupported, "CUDA: no device cuda:" + std::to_string(index) + " (" + std::to_string(count) + " found)");
  cudaDeviceProp prop{};
  SD_CUDA_TRY(cudaGetDeviceProperties(&prop, index));
  auto backend = std::shared_ptr<const Backend>(new cuda::CudaBackend(index, prop));
  made[index] = backend;
  return backend;
}

CudaInfo cuda_info() {
  CudaInfo info;
  info.built = true;
  info.runtime = cuda::version_text(CUDART_VERSION);
  const std::string headers = std::to_string(CUDNN_MAJOR) + "." + std::to_string(CUDNN_MINOR) + "." + std::to_string(CUDNN_PATCHLEVEL);
  if (const auto* lib = cuda::CudnnLibrary::shared())
    info.cudnn = lib->version_text() + " (headers " + headers + ")", info.cudnn_loaded = true;
  else
    info.cudnn = cuda::CudnnLibrary::shared_problem();
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) info.driver = cuda::version_text(driver);
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    info.problem = cuda::device_problem(e);
    return info;
  }
  for (int i = 0; i < count; ++i) {
    auto b = cuda_backend(i);
    if (b) info.devices.push_back((*b)->description());
  }
  if (info.devices.empty()) info.problem = "no CUDA GPU found";
  return info;
}

void set_cuda_conv_graph_planning_budget(double seconds) { cuda::set_cudnn_graph_planning_budget(seconds); }
void grant_cuda_conv_graph_planning(double seconds) { cuda::grant_cudnn_graph_planning(seconds); }
double cuda_conv_graph_planning_spent() { return cuda::cudnn_graph_planning_spent(); }
double cuda_conv_graph_planning_budget() { return cuda::cudnn_graph_planning_budget(); }

Status cuda_device_status(int index) {
  SD_CUDA_TRY(cudaSetDevice(index));
  SD_CUDA_TRY(cudaDeviceSynchronize());
  SD_CUDA_TRY(cudaGetLastError());
  return ok();
}

}  // namespace sd::native
