// NativeSession: runs a model with plans cached per input shape set, on the session's backends.
// Memory: one arena and one scratch block per backend and session, sized by the largest plan,
// reused by every run (no allocation in steady state); one stream per backend and session.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "core/human_bytes.h"
#include "core/memory_budget.h"
#include "engine/native/exec/plan.h"
#include "engine/native/backend.h"
#include "engine/native/session.h"

namespace sd::native {
namespace {

class Session final : public NativeSession {
 public:
  Session(std::shared_ptr<const NativeModel> model, const SessionOptions& options)
      : model_(std::move(model)), options_(options), profile_(options.profile_rows >= 0) {}

  // One stream per backend; the CPU's backend last unless given.
  Status init() {
    backends_ = options_.backends;
    bool host = false;
    for (const auto& b : backends_) {
      if (!b) return fail(ErrorCode::kUsage, "a session backend is null");
      host = host || b->device().is_host();
    }
    if (!host) backends_.push_back(cpu_backend());
    for (const auto& b : backends_) {
      raw_backends_.push_back(b.get());
      SD_ASSIGN_OR_RETURN(auto stream, b->create_stream(std::max(1, options_.threads)));
      streams_.push_back(std::move(stream));
    }
    arenas_.resize(backends_.size());
    scratch_.resize(backends_.size());
    return ok();
  }
  ~Session() override {
    if (!profile_ || runs_ == 0) return;
    // --engine-profile: time per node per run over the session's life, slowest first (the
    // profile_rows slowest, or every node), and per op type.
    std::vector<std::pair<double, std::string>> rows;
    std::map<std::string, double> by_op;
    double total = 0;
    for (const auto& [label, ms] : step_ms_) {
      rows.push_back({ms / static_cast<double>(runs_), label});
      total += ms;
      auto q = label.find(' ');
      by_op[q == std::string::npos ? label : label.substr(0, q)] += ms / static_cast<double>(runs_);
    }
    std::sort(rows.rbegin(), rows.rend());
    const bool all = options_.profile_rows == 0;
    const size_t shown = static_cast<size_t>(std::max(0, options_.profile_rows));
    std::fprintf(stderr, "native engine profile: %.2f ms per run (%lld runs, each plan's first left out) in %zu nodes\n",
                 total / static_cast<double>(runs_), static_cast<long long>(runs_), rows.size());
    for (size_t i = 0; i < rows.size() && (all || i < shown); ++i) std::fprintf(stderr, "%10.3f ms  %s\n", rows[i].first, rows[i].second.c_str());
    std::vector<std::pair<double, std::string>> ops;
    for (const auto& [op, ms] : by_op) ops.push_back({ms, op});
    std::sort(ops.rbegin(), ops.rend());
    std::fprintf(stderr, "per op type:\n");
    for (const auto& [ms, op] : ops) std::fprintf(stderr, "%10.3f ms  %s\n", ms, op.c_str());
  }

  Status run(std::span<const TensorRef> inputs, std::vector<HostTensor>& outputs) override {
    const Graph& g = model_->graph();
    if (inputs.size() != g.inputs.size())
      return fail(ErrorCode::kUsage, "the model takes " + std::to_string(g.inputs.size()) + " inputs, got " + std::to_string(inputs.size()));
    std::vector<Shape>& shapes = shapes_;  // reused: no allocation per run
    shapes.clear();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const IoInfo& info = model_->inputs()[i];
      if (inputs[i].dtype != info.dtype)
        return fail(ErrorCode::kUsage, "input '" + info.name + "' must be " + dtype_name(info.dtype) + ", got " + dtype_name(inputs[i].dtype));
      bool fits = inputs[i].shape.rank == info.shape.rank;
      for (int d = 0; fits && d < info.shape.rank; ++d)
        fits = info.shape[d] < 0 || info.shape[d] == inputs[i].shape[d];
      if (!fits) return fail(ErrorCode::kUsage, "input '" + info.name + "' must have shape " + info.shape.str() + ", got " + inputs[i].shape.str());
      shapes.push_back(inputs[i].shape);
    }
    SD_TRY(within_run([&] { return execute(inputs, shapes); }));
    // After every backend's end_run: a device's copy of an output into host memory is done.
    const exec::Plan& plan = *last_;
    outputs.resize(plan.output_bufs.size());
    for (size_t i = 0; i < plan.output_bufs.size(); ++i) {
      const ValueType& t = plan.output_types[i];
      HostTensor& out = outputs[i];
      if (out.empty() || out.dtype() != t.dtype || out.shape() != t.shape || out.data() == nullptr) out = HostTensor(t.dtype, t.shape);
      if (out.bytes() > 0) std::memcpy(out.data(), resolve(plan.output_bufs[i], inputs), out.bytes());
    }
    return ok();
  }

  // fn() between every backend's begin_run and end_run; end_run also after a failure (the
  // backend's buffers are reused by the next run, so its stream must be idle).
  template <class Fn>
  Status within_run(Fn&& fn) {
    size_t begun = 0;
    Status status = ok();
    for (; begun < backends_.size() && status; ++begun) status = backends_[begun]->begin_run(*streams_[begun]);
    if (status) status = fn();
    for (size_t b = 0; b < begun; ++b) {
      auto done = backends_[b]->end_run(*streams_[b]);
      if (status && !done) status = done;
    }
    return status;
  }

  // Before planning too, the backends have begun the run: the CPU's sets this thread's OpenMP
  // team, whose size oneDNN reads when a primitive is created.
  Status execute(std::span<const TensorRef> inputs, const std::vector<Shape>& shapes) {
    SD_ASSIGN_OR_RETURN(exec::Plan * plan, plan_for(inputs, shapes));
    SD_TRY(check_memory(*plan, shapes));
    for (size_t b = 0; b < backends_.size(); ++b) {
      // At least 64 bytes (ensure's minimum), so that even empty tensors get a real address.
      SD_TRY(ensure(arenas_[b], plan->memory[b].arena_bytes, b, "arena"));
      SD_TRY(ensure(scratch_[b], plan->memory[b].scratch_bytes, b, "scratch"));
    }
    // The profile leaves out each plan's first run (page faults on a fresh arena, lazy setup).
    const bool timed = profile_ && plan->runs++ > 0;
    if (timed) ++runs_;
    Status status = ok();
    for (exec::Step& st : plan->steps) {
      const auto b = static_cast<size_t>(st.backend);
      for (size_t k = 0; k < st.in_bufs.size(); ++k) st.in_refs[k].data = resolve(st.in_bufs[k], inputs);
      for (size_t k = 0; k < st.out_bufs.size(); ++k) st.out_refs[k].data = resolve(st.out_bufs[k], inputs);
      const ExecContext ctx{streams_[b]->threads(), scratch_[b].bytes_ptr(), streams_[b].get()};
      auto t0 = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      status = st.kernel->run(st.in_refs, st.out_refs, ctx);
      if (timed) {
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        const std::string impl = st.kernel->implementation();
        step_ms_[impl.empty() ? st.label : st.label + " [" + impl + "]"] += ms;
      }
      if (!status) {
        status = fail(status.error().code, st.label + ": " + status.error().message);
        break;
      }
    }
    return status;
  }

  void* resolve(const exec::BufferRef& b, std::span<const TensorRef> inputs) const {
    switch (b.kind) {
      case exec::BufferRef::Kind::kArena: return arenas_[static_cast<size_t>(b.backend)].bytes_ptr() + b.offset;
      case exec::BufferRef::Kind::kInput: return inputs[static_cast<size_t>(b.input)].data;
      case exec::BufferRef::Kind::kConstant: return const_cast<void*>(b.constant);
      case exec::BufferRef::Kind::kNone: return nullptr;
    }
    return nullptr;
  }

  Status check_memory(const exec::Plan& plan, const std::vector<Shape>& shapes) const {
    const size_t need = plan.arena_bytes + plan.scratch_bytes + total_bytes(plan.output_types);
    const size_t limit = memory_limit();
    if (need <= limit) return ok();
    std::string shape_list;
    for (const auto& s : shapes) shape_list += (shape_list.empty() ? "" : ", ") + s.str();
    return fail(ErrorCode::kModel, "running the model on inputs " + shape_list + " needs " + human_bytes(need) +
                                       " of working memory, " + *over_budget(need, limit));
  }

  size_t memory_limit() const { return options_.memory_limit_bytes != 0 ? options_.memory_limit_bytes : physical_memory_bytes(); }

  static size_t physical_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : ~size_t{0};
  }

  Result<PlanSummary> plan_summary(const std::vector<Shape>& input_shapes) override {
    const Graph& g = model_->graph();
    if (input_shapes.size() != g.inputs.size())
      return fail(ErrorCode::kUsage, "the model takes " + std::to_string(g.inputs.size()) + " inputs, got " + std::to_string(input_shapes.size()));
    if (fixed_mask_.empty()) fixed_mask_ = exec::plan_time_inputs(g);
    std::vector<TensorRef> refs;
    for (size_t i = 0; i < input_shapes.size(); ++i) {
      if (fixed_mask_[i]) return fail(ErrorCode::kUnsupported, "input '" + model_->inputs()[i].name + "' must be known when planning");
      refs.push_back(TensorRef{model_->inputs()[i].dtype, input_shapes[i], nullptr});
    }
    shapes_ = input_shapes;
    exec::Plan* plan = nullptr;
    SD_TRY(within_run([&]() -> Status {
      SD_ASSIGN_OR_RETURN(plan, plan_for(refs, shapes_));
      return ok();
    }));
    PlanSummary summary;
    for (size_t b = 0; b < backends_.size(); ++b)
      summary.backends.push_back({backends_[b]->name(), backends_[b]->description(), layout_name(backends_[b]->preferred_layout()),
                                  dtype_name(plan->memory[b].float_storage), 0, plan->memory[b].arena_bytes,
                                  plan->memory[b].scratch_bytes});
    for (const exec::Step& st : plan->steps) {
      const auto b = static_cast<size_t>(st.backend);
      if (!st.copy) ++summary.backends[b].steps;
      summary.steps.push_back({st.label, backends_[b]->name(), st.kernel->implementation(), st.copy});
    }
    summary.copies = plan->copies;
    return summary;
  }

  MemoryStats memory_stats() const override {
    MemoryStats m;
    if (last_) m.arena_bytes = last_->arena_bytes, m.intermediate_bytes = last_->total_intermediate_bytes;
    m.plans = plans_.size();
    return m;
  }

 private:
  // The cached plan for these inputs, built on first use.
  Result<exec::Plan*> plan_for(std::span<const TensorRef> inputs, const std::vector<Shape>& shapes) {
    const Graph& g = model_->graph();
    if (fixed_mask_.empty()) fixed_mask_ = exec::plan_time_inputs(g);
    std::string fixed_key;
    std::vector<HostTensor> fixed_values;
    std::vector<const HostTensor*> fixed;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!fixed_mask_[i]) continue;
      if (fixed.empty()) fixed_values.resize(inputs.size()), fixed.assign(inputs.size(), nullptr);
      // Baked into the plan: its bytes are part of the key.
      fixed_values[i] = HostTensor(inputs[i].dtype, inputs[i].shape);
      std::memcpy(fixed_values[i].data(), inputs[i].data, inputs[i].bytes());
      fixed[i] = &fixed_values[i];
      fixed_key.append(static_cast<const char*>(inputs[i].data), inputs[i].bytes());
    }
    if (last_ && last_->input_shapes == shapes && fixed_key.empty()) return last_;
    auto key = key_of(shapes) + fixed_key;
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      std::vector<ValueType> types;
      for (size_t i = 0; i < inputs.size(); ++i) types.push_back({inputs[i].dtype, inputs[i].shape});
      exec::PlanOptions po;
      po.channels_last = options_.channels_last;
      po.memory_limit_bytes = memory_limit();
      po.device_fp16 = options_.device_fp16;
      auto built = exec::build_plan(g, types, builtin_op_registry(), raw_backends_, fixed, po);
      if (!built) return tl::unexpected(built.error());
      it = plans_.emplace(key, std::move(*built)).first;
    }
    last_ = it->second.get();
    return last_;
  }

  // A buffer of the backend's memory at least `bytes` long (kept when large enough).
  Status ensure(DeviceBuffer& buffer, size_t bytes, size_t backend, const char* what) {
    if (buffer && buffer.bytes() >= bytes) return ok();
    buffer.reset();
    auto got = backends_[backend]->allocate(std::max<size_t>(bytes, 64));
    if (!got) return fail(got.error().code, backends_[backend]->name() + " " + what + ": " + got.error().message);
    buffer = std::move(*got);
    return ok();
  }

  static std::string key_of(const std::vector<Shape>& shapes) {
    std::string k;
    for (const auto& s : shapes) k += s.str() + ";";
    return k;
  }

  std::shared_ptr<const NativeModel> model_;
  SessionOptions options_;
  std::vector<std::shared_ptr<const Backend>> backends_;
  std::vector<const Backend*> raw_backends_;             // the same, for the planner
  std::vector<std::unique_ptr<BackendStream>> streams_;  // one per backend
  std::vector<DeviceBuffer> arenas_, scratch_;           // one per backend
  // Declared after the buffers: plans (with their kernels and uploaded constants) go first.
  std::map<std::string, std::unique_ptr<exec::Plan>> plans_;
  exec::Plan* last_ = nullptr;
  bool profile_ = false;
  int64_t runs_ = 0;
  std::vector<bool> fixed_mask_;
  std::vector<Shape> shapes_;
  std::map<std::string, double> step_ms_;
};

}  // namespace

Result<std::unique_ptr<NativeSession>> NativeSession::create(std::shared_ptr<const NativeModel> model, const SessionOptions& options) {
  if (!model) return fail(ErrorCode::kUsage, "no model");
  auto session = std::make_unique<Session>(std::move(model), options);
  SD_TRY(session->init());
  return std::unique_ptr<NativeSession>(std::move(session));
}

}  // namespace sd::native
