#include "fake_device_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <vector>

#include "engine/native/half.h"

namespace sd::test {

// Work queued on a stream: what it runs, and the memory it touches (checked again on replay).
struct QueuedWork {
  std::function<Status()> run;
  std::vector<std::pair<const void*, size_t>> device, host;
};

class FakeStream final : public native::BackendStream {
 public:
  explicit FakeStream(int threads) : threads_(threads) {}
  int threads() const override { return threads_; }
  bool in_run = false;
  bool capturing = false, invalidated = false;
  std::vector<QueuedWork> queue, recorded;
  int recorded_copies = 0;

  void enqueue(QueuedWork w) { (capturing ? recorded : queue).push_back(std::move(w)); }
  // Runs what is queued, in order; the first error (the rest is dropped, as a faulted stream's).
  Status flush() {
    Status status = ok();
    for (auto& w : queue)
      if (status) status = w.run();
    queue.clear();
    return status;
  }

 private:
  int threads_;
};

namespace {

class FakeGraph final : public native::BackendGraph {
 public:
  FakeGraph(std::vector<QueuedWork> work, int copies) : work(std::move(work)), copies(copies) {}
  std::vector<QueuedWork> work;
  int copies;
};

// The context with float16 types as float32: what the CPU's kernels are asked for.
struct WidenedContext {
  std::vector<native::ValueType> ins, outs;
  explicit WidenedContext(const native::OpContext& ctx) : ins(ctx.inputs.begin(), ctx.inputs.end()), outs(ctx.outputs.begin(), ctx.outputs.end()) {
    for (auto* v : {&ins, &outs})
      for (auto& t : *v)
        if (t.dtype == native::DType::kFloat16) t.dtype = native::DType::kFloat32;
  }
  native::OpContext of(const native::OpContext& ctx) const { return {ctx.node, ctx.opset, ins, ctx.constants, outs}; }
};

bool has_half(const native::OpContext& ctx) {
  for (auto span : {ctx.inputs, ctx.outputs})
    for (const auto& t : span)
      if (t.dtype == native::DType::kFloat16) return true;
  return false;
}

// fp16 storage emulated around a float32 kernel: fp16 inputs widened into buffers of its own,
// the kernel run on them, its float32 outputs rounded to fp16 into the real outputs. Arithmetic in
// float32 on fp16 data, results stored as fp16: what the CUDA backend's fp16 kernels do.
class HalfEmulationKernel final : public native::Kernel {
 public:
  HalfEmulationKernel(std::unique_ptr<native::Kernel> inner, const native::OpContext& ctx) : inner_(std::move(inner)) {
    for (const auto& t : ctx.inputs) in_wide_.emplace_back(t.dtype == native::DType::kFloat16 ? size_t(t.shape.numel()) : 0);
    for (const auto& t : ctx.outputs) out_wide_.emplace_back(t.dtype == native::DType::kFloat16 ? size_t(t.shape.numel()) : 0);
  }
  Status run(std::span<const native::TensorRef> inputs, std::span<const native::TensorRef> outputs,
             const native::ExecContext& ctx) override {
    std::vector<native::TensorRef> ins(inputs.begin(), inputs.end()), outs(outputs.begin(), outputs.end());
    for (size_t k = 0; k < ins.size(); ++k) {
      if (ins[k].dtype != native::DType::kFloat16 || !ins[k].data) continue;
      native::halves_to_floats(ins[k].as<uint16_t>(), in_wide_[k].data(), in_wide_[k].size());
      ins[k] = native::TensorRef{native::DType::kFloat32, ins[k].shape, in_wide_[k].data(), ins[k].device};
    }
    for (size_t k = 0; k < outs.size(); ++k)
      if (outs[k].dtype == native::DType::kFloat16 && outs[k].data)
        outs[k] = native::TensorRef{native::DType::kFloat32, outs[k].shape, out_wide_[k].data(), outs[k].device};
    SD_TRY(inner_->run(ins, outs, ctx));
    for (size_t k = 0; k < outputs.size(); ++k)
      if (outputs[k].dtype == native::DType::kFloat16 && outputs[k].data)
        native::floats_to_halves(out_wide_[k].data(), outputs[k].as<uint16_t>(), out_wide_[k].size());
    return ok();
  }
  size_t scratch_bytes() const override { return inner_->scratch_bytes(); }
  std::string implementation() const override { return "fp16:" + inner_->implementation(); }

 private:
  std::unique_ptr<native::Kernel> inner_;
  std::vector<std::vector<float>> in_wide_, out_wide_;
};

}  // namespace

// The CPU's kernel, run only on memory the fake device owns.
class GuardedKernel final : public native::Kernel {
 public:
  GuardedKernel(const FakeDeviceBackend& owner, std::unique_ptr<native::Kernel> inner, std::string what)
      : owner_(owner), inner_(std::move(inner)), what_(std::move(what)) {}
  Status run(std::span<const native::TensorRef> inputs, std::span<const native::TensorRef> outputs,
             const native::ExecContext& ctx) override {
    const int n = owner_.kernel_runs_++;
    if (n == owner_.fail_at_) return fail(ErrorCode::kInternal, "injected failure");
    auto check = [&](const native::TensorRef& t, const char* role, size_t k) -> Status {
      if (!t.data) return ok();  // an omitted optional input
      if (t.device != owner_.device())
        return fail(ErrorCode::kInternal, what_ + ": " + role + " " + std::to_string(k) + " is on " + t.device.str());
      if (!owner_.owns(t.data, t.bytes()))
        return fail(ErrorCode::kInternal, what_ + ": " + role + " " + std::to_string(k) + " is not in the test device's memory");
      return ok();
    };
    for (size_t k = 0; k < inputs.size(); ++k) SD_TRY(check(inputs[k], "input", k));
    for (size_t k = 0; k < outputs.size(); ++k) SD_TRY(check(outputs[k], "output", k));
    auto* stream = static_cast<FakeStream*>(ctx.stream);
    if (!stream || !stream->in_run) return fail(ErrorCode::kInternal, what_ + ": run outside begin_run/end_run");
    if (inner_->scratch_bytes() && !owner_.owns(ctx.scratch, inner_->scratch_bytes()))
      return fail(ErrorCode::kInternal, what_ + ": scratch is not in the test device's memory");
    if (stream->capturing && owner_.refuse_capture_) {
      stream->invalidated = true;
      return fail(ErrorCode::kInternal, what_ + ": not allowed while recording");
    }
    // Queued: it runs when the stream is waited for, on the memory it was given now.
    QueuedWork w;
    std::vector<native::TensorRef> ins(inputs.begin(), inputs.end()), outs(outputs.begin(), outputs.end());
    for (const auto& t : ins)
      if (t.data) w.device.push_back({t.data, t.bytes()});
    for (const auto& t : outs)
      if (t.data) w.device.push_back({t.data, t.bytes()});
    if (inner_->scratch_bytes()) w.device.push_back({ctx.scratch, inner_->scratch_bytes()});
    w.run = [inner = inner_.get(), ins = std::move(ins), outs = std::move(outs), ctx, what = what_]() -> Status {
      auto st = inner->run(ins, outs, ctx);
      if (!st) return fail(st.error().code, what + ": " + st.error().message);
      return ok();
    };
    stream->enqueue(std::move(w));
    return ok();
  }
  size_t scratch_bytes() const override { return inner_->scratch_bytes(); }
  std::string implementation() const override { return "test:" + inner_->implementation(); }

 private:
  const FakeDeviceBackend& owner_;
  std::unique_ptr<native::Kernel> inner_;
  std::string what_;
};

FakeDeviceBackend::FakeDeviceBackend(std::set<std::string> ops, native::Layout layout, native::DType float_storage)
    : ops_(std::move(ops)), layout_(layout), float_storage_(float_storage) {}

FakeDeviceBackend::~FakeDeviceBackend() = default;

bool FakeDeviceBackend::supports(const native::OpContext& ctx) const {
  if (!ops_.empty() && !ops_.count(ctx.node.op_type)) return false;
  if (has_half(ctx) && float_storage_ != native::DType::kFloat16) return false;  // only what it stores
  if (claims_ && !claims_(ctx)) return false;
  const WidenedContext wide(ctx);
  return native::cpu_backend()->supports(wide.of(ctx));
}

std::vector<std::string> FakeDeviceBackend::op_types() const {
  if (ops_.empty()) return native::cpu_backend()->op_types();
  return std::vector<std::string>(ops_.begin(), ops_.end());
}

Result<std::unique_ptr<native::Kernel>> FakeDeviceBackend::create_kernel(const native::OpContext& ctx) const {
  const WidenedContext wide(ctx);
  SD_ASSIGN_OR_RETURN(auto inner, native::cpu_backend()->create_kernel(wide.of(ctx)));
  if (has_half(ctx)) inner = std::make_unique<HalfEmulationKernel>(std::move(inner), ctx);
  ++counters_.kernels;
  return std::unique_ptr<native::Kernel>(new GuardedKernel(*this, std::move(inner), ctx.describe()));
}

Result<native::DeviceBuffer> FakeDeviceBackend::allocate(size_t bytes) const {
  const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(64, rounded));
  if (!p) return fail(ErrorCode::kInternal, "test device: out of memory");
  std::memset(p, 0xA5, rounded);  // garbage, as device memory is
  {
    std::lock_guard lock(mutex_);
    live_[p] = rounded;
  }
  ++counters_.allocations;
  return native::DeviceBuffer(this, p, bytes);
}

Result<native::DeviceBuffer> FakeDeviceBackend::allocate_host(size_t bytes) const {
  if (!staging_) return native::Backend::allocate_host(bytes);
  const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(64, rounded));
  if (!p) return fail(ErrorCode::kInternal, "test device: out of host memory");
  std::memset(p, 0x5A, rounded);
  {
    std::lock_guard lock(mutex_);
    host_live_[p] = rounded;
  }
  ++counters_.host_allocations;
  return native::DeviceBuffer(this, p, bytes);
}

void FakeDeviceBackend::release(void* data, size_t) const noexcept {
  {
    std::lock_guard lock(mutex_);
    if (host_live_.erase(static_cast<unsigned char*>(data)) == 0) {
      live_.erase(static_cast<unsigned char*>(data));
      ++counters_.frees;
    }
  }
  std::free(data);
}

namespace {

bool inside(const std::map<const unsigned char*, size_t>& live, const void* p, size_t bytes) {
  const auto* c = static_cast<const unsigned char*>(p);
  auto it = live.upper_bound(c);
  if (it == live.begin()) return false;
  --it;
  return c >= it->first && c + bytes <= it->first + it->second;
}

}  // namespace

bool FakeDeviceBackend::owns(const void* p, size_t bytes) const {
  std::lock_guard lock(mutex_);
  return inside(live_, p, bytes);
}

bool FakeDeviceBackend::owns_host(const void* p, size_t bytes) const {
  std::lock_guard lock(mutex_);
  return inside(host_live_, p, bytes);
}

Status FakeDeviceBackend::check_copy(void* dst, native::Device dst_device, size_t dst_bytes, const void* src, native::Device src_device,
                                     size_t src_bytes, native::BackendStream* stream) const {
  for (auto [p, d, bytes] : {std::tuple<const void*, native::Device, size_t>{dst, dst_device, dst_bytes}, {src, src_device, src_bytes}}) {
    if (d == device() && !owns(p, bytes)) return fail(ErrorCode::kInternal, "test device copy: pointer not in its memory");
    if (d != device() && !d.is_host()) return fail(ErrorCode::kInternal, "test device copy: from " + d.str());
    if (d.is_host() && owns(p, bytes)) return fail(ErrorCode::kInternal, "test device copy: device memory named as host");
  }
  auto* fs = static_cast<FakeStream*>(stream);
  if (fs && !fs->in_run) return fail(ErrorCode::kInternal, "test device copy outside a run");
  const bool to_host = dst_device.is_host();
  if (fs && staging_ && (to_host || src_device.is_host()) && !owns_host(to_host ? dst : src, to_host ? dst_bytes : src_bytes))
    return fail(ErrorCode::kInternal, "test device copy: queued from or to host memory that is not page-locked staging");
  return ok();
}

// A checked copy, queued on the stream as a device's is (done on return without one, or from
// pageable memory when staging is off).
Status FakeDeviceBackend::queue_copy(void* dst, native::Device dst_device, size_t dst_bytes, const void* src, native::Device src_device,
                                     size_t src_bytes, native::BackendStream* stream, std::function<void()> body) const {
  SD_TRY(check_copy(dst, dst_device, dst_bytes, src, src_device, src_bytes, stream));
  auto* fs = static_cast<FakeStream*>(stream);
  if (fs && fs->capturing) ++fs->recorded_copies;
  else ++counters_.copies;
  if (!fs) {
    body();
    return ok();
  }
  if (!staging_) SD_TRY(fs->flush());  // pageable memory: done on return, after what was queued before
  const bool to_host = dst_device.is_host();
  QueuedWork w;
  w.run = [body = std::move(body)]() -> Status {
    body();
    return ok();
  };
  w.device.push_back({to_host ? src : dst, to_host ? src_bytes : dst_bytes});
  if (staging_) w.host.push_back({to_host ? dst : src, to_host ? dst_bytes : src_bytes});
  fs->enqueue(std::move(w));
  if (!staging_ && !fs->capturing) return fs->flush();
  return ok();
}

Status FakeDeviceBackend::copy(void* dst, native::Device dst_device, const void* src, native::Device src_device, size_t bytes,
                               native::BackendStream* stream) const {
  return queue_copy(dst, dst_device, bytes, src, src_device, bytes, stream, [dst, src, bytes] {
    if (bytes) std::memcpy(dst, src, bytes);
  });
}

// As the CUDA backend does it: the float32 side copied through the scratch, converted on the device.
Status FakeDeviceBackend::copy_convert(void* dst, native::DType dst_type, native::Device dst_device, const void* src, native::DType src_type,
                                       native::Device src_device, size_t count, void* scratch, native::BackendStream* stream) const {
  using native::DType;
  const bool up = src_type == DType::kFloat32 && dst_type == DType::kFloat16 && src_device.is_host() && dst_device == device();
  const bool down = src_type == DType::kFloat16 && dst_type == DType::kFloat32 && src_device == device() && dst_device.is_host();
  if ((!up && !down) || float_storage_ != DType::kFloat16)
    return fail(ErrorCode::kInternal, std::string("test device: no converting copy ") + native::dtype_name(src_type) + " -> " +
                                          native::dtype_name(dst_type));
  if (count && !owns(scratch, convert_scratch_bytes(count))) return fail(ErrorCode::kInternal, "test device copy: scratch not in its memory");
  return queue_copy(dst, dst_device, count * dtype_size(dst_type), src, src_device, count * dtype_size(src_type), stream,
                    [=] {
                      if (count == 0) return;
                      auto* staged = static_cast<float*>(scratch);
                      if (up) {
                        std::memcpy(staged, src, count * sizeof(float));
                        native::floats_to_halves(staged, static_cast<uint16_t*>(dst), count);
                      } else {
                        native::halves_to_floats(static_cast<const uint16_t*>(src), staged, count);
                        std::memcpy(dst, staged, count * sizeof(float));
                      }
                    });
}

Result<std::unique_ptr<native::BackendStream>> FakeDeviceBackend::create_stream(int threads) const {
  ++counters_.streams;
  return std::unique_ptr<native::BackendStream>(new FakeStream(threads));
}

Status FakeDeviceBackend::begin_run(native::BackendStream& stream) const {
  ++counters_.begin_runs;
  static_cast<FakeStream&>(stream).in_run = true;
  return ok();
}

Status FakeDeviceBackend::end_run(native::BackendStream& stream) const {
  ++counters_.end_runs;
  auto& fs = static_cast<FakeStream&>(stream);
  Status status = fs.flush();
  fs.in_run = false;
  return status;
}

Status FakeDeviceBackend::wait(native::BackendStream& stream) const {
  ++counters_.waits;
  return static_cast<FakeStream&>(stream).flush();
}

Status FakeDeviceBackend::begin_capture(native::BackendStream& stream) const {
  if (!capture_) return native::Backend::begin_capture(stream);
  auto& fs = static_cast<FakeStream&>(stream);
  fs.capturing = true;
  fs.invalidated = false;
  fs.recorded.clear();
  fs.recorded_copies = 0;
  return ok();
}

Result<std::unique_ptr<native::BackendGraph>> FakeDeviceBackend::end_capture(native::BackendStream& stream) const {
  if (!capture_) return native::Backend::end_capture(stream);
  auto& fs = static_cast<FakeStream&>(stream);
  fs.capturing = false;
  if (fs.invalidated) return fail(ErrorCode::kInternal, "test device: the recording was invalidated");
  ++counters_.captures;
  return std::unique_ptr<native::BackendGraph>(new FakeGraph(std::move(fs.recorded), fs.recorded_copies));
}

Status FakeDeviceBackend::replay(native::BackendGraph& graph, native::BackendStream& stream) const {
  if (!capture_) return native::Backend::replay(graph, stream);
  auto& g = static_cast<FakeGraph&>(graph);
  auto& fs = static_cast<FakeStream&>(stream);
  if (!fs.in_run) return fail(ErrorCode::kInternal, "test device replay outside a run");
  for (const auto& w : g.work) {
    for (auto [p, n] : w.device)
      if (!owns(p, n)) return fail(ErrorCode::kInternal, "test device replay: the graph's device memory is no longer allocated");
    for (auto [p, n] : w.host)
      if (!owns_host(p, n)) return fail(ErrorCode::kInternal, "test device replay: the graph's host staging is no longer allocated");
  }
  for (const auto& w : g.work) fs.queue.push_back(w);
  counters_.copies += g.copies;
  ++counters_.replays;
  return ok();
}

}  // namespace sd::test
