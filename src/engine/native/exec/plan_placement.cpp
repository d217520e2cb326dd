// The planner's backends (planner.h): which backend runs a step, the values' homes, and the copy
// steps (or uploads, for constants) that move a value into the memory of the backend reading it.
#include <algorithm>

#include "engine/native/exec/planner.h"

namespace sd::native::exec {
namespace {

// Copies a tensor between two backends' memory (one of them the host's), on the stream of the
// backend that is not the host.
// Where the two sides store the tensor in different element types (float32 on the host, fp16 on
// a device with --precision fp16), the copy converts on the device side (Backend::copy_convert).
class CopyKernel final : public Kernel {
 public:
  CopyKernel(const Backend& backend, Device dst, Device src, DType dst_type, DType src_type, size_t count)
      : backend_(backend), dst_(dst), src_(src), dst_type_(dst_type), src_type_(src_type), count_(count) {}
  Status run(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs, const ExecContext& ctx) override {
    if (dst_type_ != src_type_)
      return backend_.copy_convert(outputs[0].data, dst_type_, dst_, inputs[0].data, src_type_, src_, count_, ctx.scratch, ctx.stream);
    return backend_.copy(outputs[0].data, dst_, inputs[0].data, src_, outputs[0].bytes(), ctx.stream);
  }
  size_t scratch_bytes() const override { return dst_type_ != src_type_ ? backend_.convert_scratch_bytes(count_) : 0; }
  std::string implementation() const override {
    std::string s = src_.str() + " -> " + dst_.str();
    if (dst_type_ != src_type_) s += std::string(" (") + dtype_name(src_type_) + " -> " + dtype_name(dst_type_) + ")";
    return s;
  }

 private:
  const Backend& backend_;
  Device dst_, src_;
  DType dst_type_, src_type_;
  size_t count_;
};



}  // namespace

Result<Planner::Placed> Planner::create_kernel(const OpContext& ctx) {
  Error last{ErrorCode::kModel, ctx.describe() + ": no backend supports it"};
  for (size_t b = 0; b < backends_.size(); ++b) {
    const Backend& backend = *backends_[b];
    // Its tensors as it stores them (fp16 on a device with device_fp16); constants as on the host.
    const std::vector<ValueType> ins = stored_types({ctx.inputs.begin(), ctx.inputs.end()}, static_cast<int>(b));
    const std::vector<ValueType> outs = stored_types({ctx.outputs.begin(), ctx.outputs.end()}, static_cast<int>(b));
    const OpContext stored{ctx.node, ctx.opset, ins, ctx.constants, outs};
    if (!backend.supports(stored)) continue;
    auto kernel = backend.create_kernel(stored);
    if (kernel) return Placed{std::move(*kernel), static_cast<int>(b)};
    last = kernel.error();
    if (static_cast<int>(b) == host_) break;
  }
  return tl::unexpected(last);
}

const Backend& Planner::preferred_backend(const OpContext& ctx) const {
  for (size_t b = 0; b < backends_.size(); ++b) {
    const std::vector<ValueType> ins = stored_types({ctx.inputs.begin(), ctx.inputs.end()}, static_cast<int>(b));
    const std::vector<ValueType> outs = stored_types({ctx.outputs.begin(), ctx.outputs.end()}, static_cast<int>(b));
    if (backends_[b]->supports(OpContext{ctx.node, ctx.opset, ins, ctx.constants, outs})) return *backends_[b];
  }
  return *backends_[static_cast<size_t>(host_)];
}

Device Planner::device_of(int v) const { return v < 0 ? Device{} : backends_[static_cast<size_t>(home_of(v))]->device(); }

int Planner::home_of(int v) const {
  const ValueState& s = states_[static_cast<size_t>(v)];
  if (s.home >= 0) return s.home;
  return host_;
}

Result<int> Planner::on_backend(int v, int b) {
  if (v < 0 || home_of(v) == b) return v;
  if (auto it = moved_.find({v, b}); it != moved_.end()) return it->second;
  const ValueState src = states_[static_cast<size_t>(v)];
  const Backend& to = *backends_[static_cast<size_t>(b)];
  const int from = home_of(v);
  if (from != host_ && b != host_) {  // between two devices: through the host
    SD_ASSIGN_OR_RETURN(int h, on_backend(v, host_));
    SD_ASSIGN_OR_RETURN(int nv, on_backend(h, b));
    moved_[{v, b}] = nv;
    return nv;
  }
  int nv = new_value(src.logical, src.nhwc);
  states_[static_cast<size_t>(nv)].home = b;
  if (src.constant && b != host_) {
    // As the backend stores it: float32 weights become fp16 here, once, where it stores fp16.
    const std::shared_ptr<HostTensor> c = stored_constant(src.constant, b);
    const size_t bytes = c->bytes();
    SD_ASSIGN_OR_RETURN(DeviceBuffer buf, to.allocate(std::max<size_t>(bytes, 1)));
    SD_TRY(to.copy(buf.data(), to.device(), c->data(), Device{}, bytes, nullptr));
    states_[static_cast<size_t>(nv)].uploaded = buf.data();
    states_[static_cast<size_t>(nv)].root = -1;
    plan_->device_constants.push_back(std::move(buf));
  } else {
    // The device side's backend does the copy, on its stream.
    const Backend& device_side = b == host_ ? *backends_[static_cast<size_t>(from)] : to;
    const ValueType t = physical_type(v);
    const ValueType src_t = stored_type(t, from), dst_t = stored_type(t, b);
    auto kernel = std::make_unique<CopyKernel>(device_side, backends_[static_cast<size_t>(b)]->device(),
                                               backends_[static_cast<size_t>(from)]->device(), dst_t.dtype, src_t.dtype,
                                               static_cast<size_t>(std::max<int64_t>(t.shape.numel(), 0)));
    const int side = b == host_ ? from : b;
    push_step(std::move(kernel), side, true, {v}, {src_t}, {nv}, {dst_t}, "copy to " + to.name(), b);
  }
  moved_[{v, b}] = nv;
  return nv;
}

ValueType Planner::physical_type(int v) const {
  const ValueState& s = states_[static_cast<size_t>(v)];
  return s.nhwc ? ValueType{s.logical.dtype, physical_of(s.logical.shape)} : s.logical;
}

int Planner::new_value(const ValueType& t, bool nhwc) {
  ValueState s;
  s.logical = t;
  s.nhwc = nhwc;
  s.defined = true;
  states_.push_back(s);
  int id = static_cast<int>(states_.size() - 1);
  states_[static_cast<size_t>(id)].root = id;
  return id;
}

void Planner::use(int v, int step) {
  if (v < 0) return;
  ValueState& s = states_[static_cast<size_t>(states_[static_cast<size_t>(v)].root >= 0 ? states_[static_cast<size_t>(v)].root : v)];
  s.last_step = std::max(s.last_step, step);
}

Status Planner::add_step(Placed placed, std::vector<int> ins, std::vector<ValueType> in_types, std::vector<int> outs,
                         std::vector<ValueType> out_types, std::string label) {
  for (int& v : ins) {
    SD_ASSIGN_OR_RETURN(v, on_backend(v, placed.backend));
  }
  // The step sees its tensors as its backend stores them (fp16 on a device with device_fp16).
  push_step(std::move(placed.kernel), placed.backend, false, std::move(ins), stored_types(in_types, placed.backend), std::move(outs),
            stored_types(out_types, placed.backend), std::move(label));
  return ok();
}

void Planner::push_step(std::unique_ptr<Kernel> k, int backend, bool copy, std::vector<int> ins, std::vector<ValueType> in_types,
                        std::vector<int> outs, std::vector<ValueType> out_types, std::string label, int out_home) {
  const int idx = static_cast<int>(steps_.size());
  for (int v : ins) use(v, idx);
  for (int v : outs)
    if (v >= 0) {
      ValueState& s = states_[static_cast<size_t>(v)];
      s.root = v;
      s.home = out_home >= 0 ? out_home : backend;
      s.first_step = idx;
      s.last_step = std::max(s.last_step, idx);
    }
  steps_.push_back(PendingStep{std::move(k), std::move(ins), std::move(outs), std::move(in_types), std::move(out_types),
                               std::move(label), backend, copy});
}

Result<int> Planner::copy_to_arena(int v) {
  const ValueState src = states_[static_cast<size_t>(v)];
  Node t;
  t.op_type = "Identity";
  t.name = "output copy";
  std::vector<ValueType> ins{src.logical}, outs{src.logical};
  std::vector<const HostTensor*> consts{nullptr};
  OpContext ctx{t, g_.opset, ins, consts, outs};
  // On the host: the output is handed over from there.
  SD_ASSIGN_OR_RETURN(auto kernel, backends_[static_cast<size_t>(host_)]->create_kernel(ctx));
  int nv = new_value(src.logical, false);
  SD_TRY(add_step(Placed{std::move(kernel), host_}, {v}, ins, {nv}, outs, "output copy"));
  return nv;
}

}  // namespace sd::native::exec
