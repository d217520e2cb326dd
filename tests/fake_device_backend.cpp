#include "fake_device_backend.h"

#include <cstdlib>
#include <cstring>
#include <tuple>
#include <vector>

#include "engine/native/half.h"

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

Status FakeDeviceBackend::check_copy(void* dst, native::Device dst_device, size_t dst_bytes, const void* src, native::Device src_device,
                                     size_t src_bytes, native::BackendStream* stream) const {
  for (auto [p, d, bytes] : {std::tuple<const void*, native::Device, size_t>{dst, dst_device, dst_bytes}, {src, src_device, src_bytes}}) {
    if (d == device() && !owns(p, bytes)) return fail(ErrorCode::kInternal, "test device copy: pointer not in its memory");
    if (d != device() && !d.is_host()) return fail(ErrorCode::kInternal, "test device copy: from " + d.str());
    if (d.is_host() && owns(p, bytes)) return fail(ErrorCode::kInternal, "test device copy: device memory named as host");
  }
  if (stream && !static_cast<FakeStream*>(stream)->in_run) return fail(ErrorCode::kInternal, "test device copy outside a run");
  return ok();
}

Status FakeDeviceBackend::copy(void* dst, native::Device dst_device, const void* src, native::Device src_device, size_t bytes,
                               native::BackendStream* stream) const {
  SD_TRY(check_copy(dst, dst_device, bytes, src, src_device, bytes, stream));
  ++counters_.copies;
  if (bytes) std::memcpy(dst, src, bytes);
  return ok();
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
  SD_TRY(check_copy(dst, dst_device, count * dtype_size(dst_type), src, src_device, count * dtype_size(src_type), stream));
  if (count && !owns(scratch, convert_scratch_bytes(count))) return fail(ErrorCode::kInternal, "test device copy: scratch not in its memory");
  ++counters_.copies;
  if (count == 0) return ok();
  auto* staged = static_cast<float*>(scratch);
  if (up) {
    std::memcpy(staged, src, count * sizeof(float));
    native::floats_to_halves(staged, static_cast<uint16_t*>(dst), count);
  } else {
    native::halves_to_floats(static_cast<const uint16_t*>(src), staged, count);
    std::memcpy(dst, staged, count * sizeof(float));
  }
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
