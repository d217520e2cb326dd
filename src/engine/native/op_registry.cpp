#include "engine/native/op_registry.h"

#include <algorithm>
#include <cstdint>

namespace sd::native {

std::string OpContext::describe() const {
  return node.op_type + " node '" + node.name + "' (opset " + std::to_string(opset) + ")";
}

Status check_arity(const OpSchema& schema, const Node& node, const std::string& what) {
  if (static_cast<int>(node.inputs.size()) < schema.min_inputs)
    return fail(ErrorCode::kModel, what + ": needs at least " + std::to_string(schema.min_inputs) + " inputs, has " +
                                       std::to_string(node.inputs.size()));
  for (int i = 0; i < schema.min_inputs; ++i)
    if (node.inputs[static_cast<size_t>(i)] < 0) return fail(ErrorCode::kModel, what + ": required input " + std::to_string(i) + " is missing");
  if (node.outputs.empty()) return fail(ErrorCode::kModel, what + ": has no outputs");
  return ok();
}

Status check_output_types(const std::vector<ValueType>& types, const std::string& what) {
  for (const ValueType& t : types) {
    int64_t n = 1;
    for (int i = 0; i < t.shape.rank; ++i) {
      const int64_t d = t.shape[i];
      if (d < 0) return fail(ErrorCode::kModel, what + ": output shape " + t.shape.str() + " has a negative dimension");
      if (d > 0 && n > (int64_t{1} << 34) / d) return fail(ErrorCode::kModel, what + ": output shape " + t.shape.str() + " is too large");
      n *= d;
    }
  }
  return ok();
}

size_t total_bytes(const std::vector<ValueType>& types) {
  size_t total = 0;
  for (const ValueType& t : types) total += static_cast<size_t>(std::max<int64_t>(t.shape.numel(), 0)) * dtype_size(t.dtype);
  return total;
}

bool all_outputs_empty(const std::vector<ValueType>& types) {
  bool any = false;
  for (const ValueType& t : types) {
    if (t.dtype == DType::kUndefined) continue;  // a slot the op does not produce (node lists more outputs)
    if (t.shape.numel() != 0) return false;
    any = true;
  }
  return any;
}

std::string mib_text(size_t bytes) { return std::to_string((bytes + (size_t{1} << 20) - 1) >> 20) + " MiB"; }

Status run_once(Kernel& kernel, std::span<const TensorRef> inputs, std::span<const TensorRef> outputs) {
  std::vector<unsigned char> scratch(kernel.scratch_bytes() + 64);
  auto* aligned = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});
  return kernel.run(inputs, outputs, ExecContext{1, aligned});
}

void OpRegistry::add(OpSchema schema) {
  auto& versions = ops_[schema.op_type];
  versions.push_back(std::move(schema));
}

const OpSchema* OpRegistry::find(std::string_view op_type, int opset) const {
  auto it = ops_.find(std::string(op_type));
  if (it == ops_.end()) return nullptr;
  for (const OpSchema& s : it->second)
    if (opset >= s.min_opset && opset <= s.max_opset) return &s;
  return nullptr;
}

std::vector<std::string> OpRegistry::op_types() const {
  std::vector<std::string> names;
  for (const auto& [name, versions] : ops_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace sd::native
