// build_plan(): the Planner's driver (planner.h says where its other parts are), and which graph
// inputs a plan needs as values.
#include "engine/native/exec/plan.h"

#include <algorithm>
#include <map>

#include "engine/native/exec/planner.h"

namespace sd::native::exec {

Result<std::unique_ptr<Plan>> Planner::build(const std::vector<ValueType>& inputs, const std::vector<const HostTensor*>& fixed) {
  plan_ = std::make_unique<Plan>();
  for (size_t b = 0; b < backends_.size(); ++b)
    if (backends_[b] && backends_[b]->device().is_host() && host_ < 0) host_ = static_cast<int>(b);
  if (host_ < 0) return fail(ErrorCode::kInternal, "no host backend to plan the model on");
  plan_->backends = backends_;
  plan_->memory.resize(backends_.size());
  for (size_t b = 0; b < backends_.size(); ++b) plan_->memory[b].float_storage = stored_dtype(DType::kFloat32, static_cast<int>(b));
  for (const auto& t : inputs) plan_->input_shapes.push_back(t.shape);
  for (size_t v = 0; v < g_.values.size(); ++v) {
    const Value& val = g_.values[v];
    if (val.constant) {
      states_[v].constant = std::make_shared<HostTensor>(*val.constant);
      states_[v].logical = {val.constant->dtype(), val.constant->shape()};
      states_[v].defined = true;
    }
  }
  for (size_t i = 0; i < g_.inputs.size(); ++i) {
    ValueState& s = states_[static_cast<size_t>(g_.inputs[i])];
    s.logical = inputs[i];
    s.defined = true;
    if (i < fixed.size() && fixed[i]) {
      s.constant = std::make_shared<HostTensor>(fixed[i]->clone());
      continue;
    }
    s.input = static_cast<int>(i);
    s.root = g_.inputs[i];
  }
  count_readers();
  for (const Node& n : g_.nodes) SD_TRY(plan_node(n));
  // A buffer made for a Concat's rows that the Concat did not take would be written past its end.
  if (!preplaced_.empty()) return fail(ErrorCode::kInternal, "planner: a buffer made for a Concat was not placed in it");
  std::vector<int> computed;  // each output where it was computed (a device's memory, or the host's)
  for (int o : g_.outputs) {
    SD_ASSIGN_OR_RETURN(int v, as_plain(o));
    computed.push_back(v);
    SD_ASSIGN_OR_RETURN(v, on_backend(v, host_));  // outputs are handed over in host memory
    ValueState& s = states_[static_cast<size_t>(v)];
    if (s.constant || s.input >= 0) {
      // A constant or an input as an output: copy it through an Identity step into the arena.
      SD_ASSIGN_OR_RETURN(v, copy_to_arena(v));
    }
    plan_->output_types.push_back(states_[static_cast<size_t>(v)].logical);
    output_values_.push_back(v);
  }
  // Every output lives to the end, past the conversion and copy steps that later outputs added.
  for (int v : output_values_) use(v, static_cast<int>(steps_.size()));
  // And where a device computed them: a caller may read them there after the run
  // (NativeSession::device_output), so no later step (a layout conversion of the next output) may
  // reuse those bytes.
  for (int v : computed)
    if (home_of(v) != host_ && !states_[static_cast<size_t>(v)].constant) use(v, static_cast<int>(steps_.size()));
  allocate();
  for (size_t i = 0; i < steps_.size(); ++i) {
    Step& st = plan_->steps.emplace_back();
    st.kernel = std::move(steps_[i].kernel);
    st.backend = steps_[i].backend;
    st.copy = steps_[i].copy;
    if (st.copy) ++plan_->copies;
    size_t& scratch = plan_->memory[static_cast<size_t>(st.backend)].scratch_bytes;
    scratch = std::max(scratch, st.kernel->scratch_bytes());
    st.label = steps_[i].label;
    for (size_t k = 0; k < steps_[i].ins.size(); ++k) {
      st.in_bufs.push_back(buffer_of(steps_[i].ins[k]));
      st.in_refs.push_back(TensorRef{steps_[i].in_types[k].dtype, steps_[i].in_types[k].shape, nullptr, device_of(steps_[i].ins[k])});
    }
    for (size_t k = 0; k < steps_[i].outs.size(); ++k) {
      st.out_bufs.push_back(buffer_of(steps_[i].outs[k]));
      st.out_refs.push_back(TensorRef{steps_[i].out_types[k].dtype, steps_[i].out_types[k].shape, nullptr, device_of(steps_[i].outs[k])});
    }
  }
  for (const BackendMemory& m : plan_->memory) plan_->scratch_bytes += m.scratch_bytes;
  for (int v : output_values_) plan_->output_bufs.push_back(buffer_of(v));
  for (auto& s : states_)
    if (s.constant) plan_->keep_alive.push_back(s.constant);
  for (auto& m : made_constants_) plan_->keep_alive.push_back(m);
  return std::move(plan_);
}

Result<std::unique_ptr<Plan>> build_plan(const Graph& g, const std::vector<ValueType>& inputs, const OpRegistry& registry,
                                         std::span<const Backend* const> backends,
                                         const std::vector<const HostTensor*>& fixed_inputs, const PlanOptions& options) {
  Planner p(g, registry, backends, options);
  try {
    return p.build(inputs, fixed_inputs);
  } catch (const std::exception& e) {  // a library refusing (bad_alloc, length_error): an error, not a crash
    return fail(ErrorCode::kModel, std::string("planning the model failed: ") + e.what());
  }
}

std::vector<bool> plan_time_inputs(const Graph& g) {
  static const std::map<std::string, std::vector<size_t>> slots = {
      {"Reshape", {1}}, {"Resize", {1, 2, 3}}, {"Upsample", {1}}, {"ReduceSum", {1}}, {"ReduceMax", {1}}, {"ReduceMin", {1}},
      {"ReduceMean", {1}}, {"ReduceProd", {1}}, {"ReduceL2", {1}}, {"ReduceSumSquare", {1}}, {"Slice", {1, 2, 3, 4}},
      {"Unsqueeze", {1}}, {"Squeeze", {1}}, {"Split", {1}}, {"TopK", {1}}, {"Pad", {1, 3}}, {"ConstantOfShape", {0}},
      {"Tile", {1}}, {"Expand", {1}}, {"Range", {0, 1, 2}}, {"Conv", {1, 2}}, {"FusedConv", {1, 2}}, {"Dropout", {1, 2}}};
  std::vector<bool> fixed(g.inputs.size(), false);
  for (const Node& n : g.nodes) {
    auto it = slots.find(n.op_type);
    if (it == slots.end()) continue;
    for (size_t k : it->second) {
      if (k >= n.inputs.size() || n.inputs[k] < 0) continue;
      for (size_t i = 0; i < g.inputs.size(); ++i)
        if (g.inputs[i] == n.inputs[k]) fixed[i] = true;
    }
  }
  return fixed;
}

}  // namespace sd::native::exec
