// NativeSession: runs a model with plans cached per input shape set. Memory: one arena per session
// sized by the largest plan, reused by every run (no allocation in steady state).
#include <omp.h>
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
#include "engine/native/session.h"
#include "engine/native/aligned_buffer.h"

namespace sd::native {
namespace {

class Session final : public NativeSession {
 public:
  Session(std::shared_ptr<const NativeModel> model, const SessionOptions& options)
      : model_(std::move(model)), options_(options), profile_(options.profile_rows >= 0) {}
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
    // This thread's budget, for oneDNN and our kernels alike. Before planning: oneDNN sizes its
    // kernels' work split by the thread count when a primitive is created.
    const int threads = std::max(1, options_.threads);
    omp_set_num_threads(threads);
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
    exec::Plan* plan = nullptr;
    if (last_ && last_->input_shapes == shapes && fixed_key.empty()) {
      plan = last_;
    } else {
      auto key = key_of(shapes) + fixed_key;
      auto it = plans_.find(key);
      if (it == plans_.end()) {
        std::vector<ValueType> types;
        for (size_t i = 0; i < inputs.size(); ++i) types.push_back({inputs[i].dtype, inputs[i].shape});
        auto built = exec::build_plan(g, types, builtin_op_registry(), fixed, options_.channels_last, memory_limit());
        if (!built) return tl::unexpected(built.error());
        it = plans_.emplace(key, std::move(*built)).first;
      }
      plan = it->second.get();
      last_ = plan;
    }
    SD_TRY(check_memory(*plan, shapes));
    if (plan->arena_bytes > arena_size_ || !arena_) {
      // At least one line (allocate_aligned's minimum), so that even empty tensors get a real address.
      arena_ = allocate_aligned(plan->arena_bytes);
      if (!arena_) return fail(ErrorCode::kInternal, "cannot allocate the " + std::to_string(plan->arena_bytes) + "-byte arena");
      arena_size_ = plan->arena_bytes;
    }
    auto resolve = [&](const exec::BufferRef& b) -> void* {
      switch (b.kind) {
        case exec::BufferRef::Kind::kArena: return arena_.get() + b.offset;
        case exec::BufferRef::Kind::kInput: return inputs[static_cast<size_t>(b.input)].data;
        case exec::BufferRef::Kind::kConstant: return const_cast<void*>(b.constant);
        case exec::BufferRef::Kind::kNone: return nullptr;
      }
      return nullptr;
    };
    if (plan->scratch_bytes > scratch_size_) {
      scratch_ = allocate_aligned(plan->scratch_bytes);
      if (!scratch_) return fail(ErrorCode::kInternal, "cannot allocate " + std::to_string(plan->scratch_bytes) + " bytes of scratch");
      scratch_size_ = plan->scratch_bytes;
    }
    const ExecContext ctx{threads, scratch_.get()};
    // The profile leaves out each plan's first run (page faults on a fresh arena, lazy setup).
    const bool timed = profile_ && plan->runs++ > 0;
    if (timed) ++runs_;
    for (exec::Step& st : plan->steps) {
      for (size_t k = 0; k < st.in_bufs.size(); ++k) st.in_refs[k].data = resolve(st.in_bufs[k]);
      for (size_t k = 0; k < st.out_bufs.size(); ++k) st.out_refs[k].data = resolve(st.out_bufs[k]);
      auto t0 = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      auto status = st.kernel->run(st.in_refs, st.out_refs, ctx);
      if (timed) {
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        const std::string impl = st.kernel->implementation();
        step_ms_[impl.empty() ? st.label : st.label + " [" + impl + "]"] += ms;
      }
      if (!status) return fail(status.error().code, st.label + ": " + status.error().message);
    }
    outputs.resize(plan->output_bufs.size());
    for (size_t i = 0; i < plan->output_bufs.size(); ++i) {
      const ValueType& t = plan->output_types[i];
      HostTensor& out = outputs[i];
      if (out.empty() || out.dtype() != t.dtype || out.shape() != t.shape || out.data() == nullptr) out = HostTensor(t.dtype, t.shape);
      if (out.bytes() > 0) std::memcpy(out.data(), resolve(plan->output_bufs[i]), out.bytes());
    }
    return ok();
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

  MemoryStats memory_stats() const override {
    MemoryStats m;
    if (last_) m.arena_bytes = last_->arena_bytes, m.intermediate_bytes = last_->total_intermediate_bytes;
    m.plans = plans_.size();
    return m;
  }

 private:
  static std::string key_of(const std::vector<Shape>& shapes) {
    std::string k;
    for (const auto& s : shapes) k += s.str() + ";";
    return k;
  }

  std::shared_ptr<const NativeModel> model_;
  SessionOptions options_;
  std::map<std::string, std::unique_ptr<exec::Plan>> plans_;
  exec::Plan* last_ = nullptr;
  AlignedBytes arena_;
  size_t arena_size_ = 0;
  AlignedBytes scratch_;
  size_t scratch_size_ = 0;
  bool profile_ = false;
  int64_t runs_ = 0;
  std::vector<bool> fixed_mask_;
  std::vector<Shape> shapes_;
  std::map<std::string, double> step_ms_;
};

}  // namespace

Result<std::unique_ptr<NativeSession>> NativeSession::create(std::shared_ptr<const NativeModel> model, const SessionOptions& options) {
  if (!model) return fail(ErrorCode::kUsage, "no model");
  return std::unique_ptr<NativeSession>(new Session(std::move(model), options));
}

}  // namespace sd::native
