// A device backend for host-side tests of the backend seam: its "device" memory is host memory
// it hands out and tracks, and every kernel it makes refuses to touch memory that is not its own
// (an input the planner forgot to copy, a host pointer where a device one belongs). It runs the
// ops it claims with the CPU backend's kernels, so its results must equal the CPU's exactly, and
// it counts what a real device backend must keep off the per-frame path: allocations, streams,
// copies, runs, recordings and replays.
// Like a GPU it is asynchronous: kernels and copies on a stream are queued and run when the
// stream is waited for (wait, end_run), so a host step that reads a copy's result too early sees
// stale memory. It has page-locked host staging (its own tracked host memory; a queued copy from
// or to other host memory fails, as it would not overlap on a GPU) and records runs as graphs:
// between begin_capture and end_capture the queued work is kept, not run, with the addresses it
// was given, and replay queues it again after checking every one of them is still allocated.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/native/backend.h"

namespace sd::test {

struct FakeDeviceCounters {
  std::atomic<int> allocations{0}, frees{0}, streams{0}, copies{0}, begin_runs{0}, end_runs{0}, kernels{0};
  std::atomic<int> host_allocations{0}, captures{0}, replays{0}, waits{0};
};

class FakeDeviceBackend final : public native::Backend {
 public:
  // `ops`: the op types it claims (empty: every op the CPU backend runs).
  // `float_storage` kFloat16: it prefers fp16 storage (preferred_float), as the CUDA backend does:
  // planned with device_fp16, its float tensors are fp16 in its memory and its kernels emulate
  // fp16 by rounding (the CPU's float32 kernel on the fp16 inputs widened, its outputs rounded to
  // fp16), and its copies to and from the host convert (staged through the scratch it asks for).
  explicit FakeDeviceBackend(std::set<std::string> ops = {}, native::Layout layout = native::Layout::kNhwc,
                             native::DType float_storage = native::DType::kFloat32);
  ~FakeDeviceBackend() override;

  std::string name() const override { return "test"; }
  native::Device device() const override { return native::Device{native::DeviceKind::kTest, 0}; }
  bool supports(const native::OpContext& ctx) const override;
  std::vector<std::string> op_types() const override;
  Result<std::unique_ptr<native::Kernel>> create_kernel(const native::OpContext& ctx) const override;
  // It runs the CPU's kernels, the stem's direct one among them.
  bool conv_reads_plain_source(const native::OpContext& ctx) const override { return native::cpu_backend()->conv_reads_plain_source(ctx); }
  native::Layout preferred_layout() const override { return layout_; }
  native::DType preferred_float() const override { return float_storage_; }
  size_t convert_scratch_bytes(size_t count) const override { return count * sizeof(float); }
  Status copy_convert(void* dst, native::DType dst_type, native::Device dst_device, const void* src, native::DType src_type,
                      native::Device src_device, size_t count, void* scratch, native::BackendStream* stream) const override;
  Result<native::DeviceBuffer> allocate(size_t bytes) const override;
  Status copy(void* dst, native::Device dst_device, const void* src, native::Device src_device, size_t bytes,
              native::BackendStream* stream) const override;
  Result<std::unique_ptr<native::BackendStream>> create_stream(int threads) const override;
  Status begin_run(native::BackendStream& stream) const override;
  Status end_run(native::BackendStream& stream) const override;
  Status wait(native::BackendStream& stream) const override;
  bool has_host_staging() const override { return staging_; }
  Result<native::DeviceBuffer> allocate_host(size_t bytes) const override;
  bool can_capture() const override { return capture_; }
  Status begin_capture(native::BackendStream& stream) const override;
  Result<std::unique_ptr<native::BackendGraph>> end_capture(native::BackendStream& stream) const override;
  Status replay(native::BackendGraph& graph, native::BackendStream& stream) const override;
  native::BackendCounters counters() const override {
    return {static_cast<uint64_t>(counters_.allocations.load()), static_cast<uint64_t>(counters_.frees.load()),
            static_cast<uint64_t>(counters_.streams.load()),     static_cast<uint64_t>(counters_.copies.load()),
            static_cast<uint64_t>(counters_.host_allocations.load()), static_cast<uint64_t>(counters_.captures.load()),
            static_cast<uint64_t>(counters_.replays.load())};
  }
  // Off: no page-locked staging (copies from any host memory), no recording (steps one by one).
  void set_host_staging(bool on) { staging_ = on; }
  void set_capture(bool on) { capture_ = on; }
  // Kernels refuse to be recorded (as one that synchronizes would): recording fails.
  void refuse_capture(bool on) const { refuse_capture_ = on; }

  // Whether [p, p + bytes) lies inside one of its live allocations (device, or host staging).
  bool owns(const void* p, size_t bytes) const;
  bool owns_host(const void* p, size_t bytes) const;
  FakeDeviceCounters& fake_counters() const { return counters_; }
  // Makes the kernel of the n-th step run from now on (0-based, counting every kernel run) fail.
  void fail_at_kernel_run(int n) const { fail_at_ = n; }
  // Claims a node only where `claims` says so too (another backend's supports(), e.g. the CUDA
  // backend's op table, asked on the host): the plan is then that backend's, run by CPU kernels.
  void claim_with(std::function<bool(const native::OpContext&)> claims) { claims_ = std::move(claims); }

 private:
  void release(void* data, size_t bytes) const noexcept override;
  Status check_copy(void* dst, native::Device dst_device, size_t dst_bytes, const void* src, native::Device src_device, size_t src_bytes,
                    native::BackendStream* stream) const;
  Status queue_copy(void* dst, native::Device dst_device, size_t dst_bytes, const void* src, native::Device src_device, size_t src_bytes,
                    native::BackendStream* stream, std::function<void()> body) const;

  std::set<std::string> ops_;
  native::Layout layout_;
  native::DType float_storage_;
  std::function<bool(const native::OpContext&)> claims_;
  mutable std::mutex mutex_;
  mutable std::map<const unsigned char*, size_t> live_;  // allocation start -> size
  mutable std::map<const unsigned char*, size_t> host_live_;  // page-locked host staging
  bool staging_ = true, capture_ = true;
  mutable std::atomic<bool> refuse_capture_{false};
  mutable FakeDeviceCounters counters_;
  mutable std::atomic<int> kernel_runs_{0};
  mutable std::atomic<int> fail_at_{-1};
  friend class GuardedKernel;
  friend class FakeStream;
};

}  // namespace sd::test
