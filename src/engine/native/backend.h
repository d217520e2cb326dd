// The seam between the native engine's planner and the hardware that runs a node. A backend
// (the CPU on oneDNN and our own kernels; later CUDA) says which nodes it runs, creates their
// kernels, owns its memory and its copies to and from the host, and brackets each run on its
// stream. The planner asks the backends in order of preference and gives a node to the first
// that supports it; the CPU backend supports every op, so it is the fallback. Where a tensor
// crosses from one backend's memory to another's, the planner inserts a copy step.
//
// Kernels created by a backend read and write that backend's memory only: the executor hands
// them arena buffers of their backend, constants uploaded there, and copies of the rest.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/native/op_registry.h"

namespace sd::native {

class Backend;

// Memory from a backend, given back to it when destroyed.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const Backend* owner, void* data, size_t bytes) : owner_(owner), data_(data), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }

  void* data() const { return data_; }
  unsigned char* bytes_ptr() const { return static_cast<unsigned char*>(data_); }
  size_t bytes() const { return bytes_; }
  explicit operator bool() const { return data_ != nullptr; }
  void reset() noexcept;

 private:
  const Backend* owner_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// A backend's execution state for one session (one pipeline worker): its thread budget on the
// CPU, its CUDA stream on a GPU. Created once per session, never per run.
class BackendStream {
 public:
  virtual ~BackendStream() = default;
  virtual int threads() const { return 1; }
  // The backend's own handle (cudaStream_t for CUDA), for its kernels; nullptr on the CPU.
  virtual void* native_handle() const { return nullptr; }
};

// What a backend has done since the process started: a run in steady state allocates nothing and
// creates no stream (the tests check these), and copies what its plan says. host_allocations:
// page-locked host staging (allocate_host); graph_captures / graph_launches: runs recorded and
// replayed (begin_capture, replay).
struct BackendCounters {
  uint64_t allocations = 0, frees = 0, streams = 0, copies = 0;
  uint64_t host_allocations = 0, graph_captures = 0, graph_launches = 0;
};

// A run's device work recorded on a stream once and queued again as a whole (a CUDA graph): the
// kernels and copies with the addresses they were given while it was recorded.
class BackendGraph {
 public:
  virtual ~BackendGraph() = default;
};

// How a backend likes 4-D activations stored between its convolutions.
enum class Layout { kNchw, kNhwc };
const char* layout_name(Layout layout);

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;  // "cpu", "cuda:0"
  virtual Device device() const = 0;
  // What the backend is built on, for model-info and --version ("oneDNN 2.6, OpenMP").
  virtual std::string description() const { return name(); }

  // Whether the backend runs this node as the planner built it (physical shapes, the layout
  // attributes of layout_attrs.h, constants known at plan time).
  virtual bool supports(const OpContext& ctx) const = 0;
  // The op types it may run (supports() decides for a given node), sorted: what the conformance
  // test runs on it.
  virtual std::vector<std::string> op_types() const = 0;
  virtual Result<std::unique_ptr<Kernel>> create_kernel(const OpContext& ctx) const = 0;
  // A convolution that reads its source as it is (plain NCHW) even when the backend keeps
  // activations channels-last (an image into the CPU's direct stem kernel).
  virtual bool conv_reads_plain_source(const OpContext& ctx) const { return false; }
  // How many parts a convolution's kernel can read its channels-last source in (kSrcParts: a
  // Concat along the channels read from its inputs, no copy); 0: a whole tensor only. ctx: the
  // node with its logical input types.
  virtual int conv_source_parts(const OpContext& ctx) const { return 0; }

  virtual Layout preferred_layout() const = 0;
  // How it would store float tensors when the session allows reduced precision (--precision
  // fp16, PlanOptions::device_fp16): kFloat16 for CUDA. The planner then gives its kernels
  // float16 types for every float32 tensor in its memory, converts constants when it uploads
  // them, and converts in the copies to and from the host (copy_convert): the host side, the
  // CPU's kernels and the model's inputs and outputs stay float32.
  virtual DType preferred_float() const { return DType::kFloat32; }

  // Memory of the backend's device, 64-byte aligned at least; an error naming the size when it
  // cannot be had.
  virtual Result<DeviceBuffer> allocate(size_t bytes) const = 0;
  // Copies between the host and this backend's device (or within either). With a stream the copy
  // is queued on it (the run's end_run waits for it); without one it is done on return.
  virtual Status copy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes,
                      BackendStream* stream) const = 0;

  // A copy between the host and this backend's device that converts `count` elements from
  // `src_type` to `dst_type` (float32 <-> preferred_float()) on the device side of the copy,
  // queued on `stream` like copy(). `scratch`: convert_scratch_bytes(count) bytes of this
  // backend's memory (the session's scratch), for staging. By default: unsupported.
  virtual size_t convert_scratch_bytes(size_t count) const { return 0; }
  virtual Status copy_convert(void* dst, DType dst_type, Device dst_device, const void* src, DType src_type, Device src_device,
                              size_t count, void* scratch, BackendStream* stream) const;

  virtual Result<std::unique_ptr<BackendStream>> create_stream(int threads) const = 0;
  // Around every run of a session: set-up on the calling thread before the first kernel (the
  // CPU's OpenMP team size), and the wait until the device has finished after the last.
  virtual Status begin_run(BackendStream& stream) const = 0;
  virtual Status end_run(BackendStream& stream) const = 0;

  // Waits until the work queued on the stream is done: before a host step reads what a copy from
  // the device wrote, or writes memory a copy to the device may still be reading.
  virtual Status wait(BackendStream& stream) const { return ok(); }

  // Page-locked host memory for the copies to and from this device (the session's staging of the
  // inputs and outputs): with it the copies are asynchronous and overlap. Backends without it say
  // so (has_host_staging false) and the session keeps ordinary host memory. Freed by the backend.
  virtual bool has_host_staging() const { return false; }
  virtual Result<DeviceBuffer> allocate_host(size_t bytes) const;

  // Recording and replaying a run's device work (BackendGraph). Between begin_capture and
  // end_capture the kernels and copies queued on the stream are recorded, not run; end_capture
  // (called whenever begin_capture succeeded, also after a step failed, so that the stream leaves
  // recording) returns the graph or why there is none; replay queues it on the stream. Backends
  // that cannot (the CPU's) say can_capture false and their steps run one by one.
  virtual bool can_capture() const { return false; }
  virtual Status begin_capture(BackendStream& stream) const;
  virtual Result<std::unique_ptr<BackendGraph>> end_capture(BackendStream& stream) const;
  virtual Status replay(BackendGraph& graph, BackendStream& stream) const;

  virtual BackendCounters counters() const { return {}; }

 private:
  friend class DeviceBuffer;
  virtual void release(void* data, size_t bytes) const noexcept = 0;
};

// The CPU backend: every op of the builtin registry, oneDNN for convolutions, matmuls and
// pooling, OpenMP threads. Shared by every session of the process.
std::shared_ptr<const Backend> cpu_backend();

}  // namespace sd::native
