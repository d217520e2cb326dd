#include "fake_device_backend.h"

#include <cstdlib>
#include <cstring>

namespace sd::test {
namespace {

class FakeStream final : public native::BackendStream {
 public:
  explicit FakeStream(int threads) : threads_(threads) {}
  int threads() const override { return threads_; }
  bool in_run = false;

 private:
  int threads_;
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
    if (!ctx.stream || !static_cast<FakeStream*>(ctx.stream)->in_run)
      return fail(ErrorCode::kInternal, what_ + ": run outside begin_run/end_run");
    if (inner_->scratch_bytes() && !owner_.owns(ctx.scratch, inner_->scratch_bytes()))
      return fail(ErrorCode::kInternal, what_ + ": scratch is not in the test device's memory");
    return inner_->run(inputs, outputs, ctx);
  }
  size_t scratch_bytes() const override { return inner_->scratch_bytes(); }
  std::string implementation() const override { return "test:" + inner_->implementation(); }

 private:
  const FakeDeviceBackend& owner_;
  std::unique_ptr<native::Kernel> inner_;
  std::string what_;
};

FakeDeviceBackend::FakeDeviceBackend(std::set<std::string> ops, native::Layout layout) : ops_(std::move(ops)), layout_(layout) {}

FakeDeviceBackend::~FakeDeviceBackend() = default;

bool FakeDeviceBackend::supports(const native::OpContext& ctx) const {
  if (!ops_.empty() && !ops_.count(ctx.node.op_type)) return false;
  return native::cpu_backend()->supports(ctx);
}

std::vector<std::string> FakeDeviceBackend::op_types() const {
  if (ops_.empty()) return native::cpu_backend()->op_types();
  return std::vector<std::string>(ops_.begin(), ops_.end());
}

Result<std::unique_ptr<native::Kernel>> FakeDeviceBackend::create_kernel(const native::OpContext& ctx) const {
  SD_ASSIGN_OR_RETURN(auto inner, native::cpu_backend()->create_kernel(ctx));
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

void FakeDeviceBackend::release(void* data, size_t) const noexcept {
  {
    std::lock_guard lock(mutex_);
    live_.erase(static_cast<unsigned char*>(data));
  }
  ++counters_.frees;
  std::free(data);
}

bool FakeDeviceBackend::owns(const void* p, size_t bytes) const {
  const auto* c = static_cast<const unsigned char*>(p);
  std::lock_guard lock(mutex_);
  auto it = live_.upper_bound(c);
  if (it == live_.begin()) return false;
  --it;
  return c >= it->first && c + bytes <= it->first + it->second;
}

Status FakeDeviceBackend::copy(void* dst, native::Device dst_device, const void* src, native::Device src_device, size_t bytes,
                               native::BackendStream* stream) const {
  for (auto [p, d] : {std::pair<const void*, native::Device>{dst, dst_device}, {src, src_device}}) {
    if (d == device() && !owns(p, bytes)) return fail(ErrorCode::kInternal, "test device copy: pointer not in its memory");
    if (d != device() && !d.is_host()) return fail(ErrorCode::kInternal, "test device copy: from " + d.str());
    if (d.is_host() && owns(p, bytes)) return fail(ErrorCode::kInternal, "test device copy: device memory named as host");
  }
  if (stream && !static_cast<FakeStream*>(stream)->in_run) return fail(ErrorCode::kInternal, "test device copy outside a run");
  ++counters_.copies;
  if (bytes) std::memcpy(dst, src, bytes);
  return ok();
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
  static_cast<FakeStream&>(stream).in_run = false;
  return ok();
}

}  // namespace sd::test
