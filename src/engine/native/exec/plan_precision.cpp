// The planner's element types per backend memory (planner.h): with PlanOptions::device_fp16, a
// backend whose preferred_float() is float16 (CUDA) stores every float32 tensor in its memory as
// fp16 and its kernels are planned with float16 types; the host's memory, the CPU's kernels, the
// model's inputs and outputs stay float32. The decision is per tensor, by where it lives: the
// copy steps between the host and such a backend convert (on the device side, Backend::copy_convert),
// and constants are converted on the host once, when they are uploaded.
#include "engine/native/exec/planner.h"
#include "engine/native/half.h"

namespace sd::native::exec {

DType Planner::stored_dtype(DType logical, int b) const {
  if (logical != DType::kFloat32 || !device_fp16_ || b < 0 || b == host_) return logical;
  return backends_[static_cast<size_t>(b)]->preferred_float() == DType::kFloat16 ? DType::kFloat16 : logical;
}

std::vector<ValueType> Planner::stored_types(const std::vector<ValueType>& ts, int b) const {
  std::vector<ValueType> out;
  out.reserve(ts.size());
  for (const ValueType& t : ts) out.push_back(stored_type(t, b));
  return out;
}

std::shared_ptr<HostTensor> Planner::stored_constant(const std::shared_ptr<HostTensor>& c, int b) const {
  if (stored_dtype(c->dtype(), b) != DType::kFloat16) return c;
  auto h = std::make_shared<HostTensor>(DType::kFloat16, c->shape());
  floats_to_halves(c->as<float>(), h->as<uint16_t>(), static_cast<size_t>(c->numel()));
  return h;
}

}  // namespace sd::native::exec
