// NativeSession: runs a model with plans cached per input shape set, on the session's backends.
// Memory: one arena and one scratch block per backend and session, sized by the largest plan,
// reused by every run (no allocation in steady state); one stream per backend and session.
// With a device backend that has page-locked host memory, the host's arena (where the outputs are
// copied back) and the inputs the device reads are staged there, so the copies are asynchronous;
// the session waits for a device's stream before a host step runs after its work. Where a plan's
// device steps run back to back on one stream (graph_region.h), the second run of the plan records
// them once (Backend::begin_capture) and every later run replays the recording; it is recorded
// again when the memory it was recorded with moves, and a recording that fails leaves the plan to
// plain launches (said once).
// A caller working on the device may write an input where the plan's upload copy would put it
// (device_input) and read an output where the device computed it (device_output), and tell a run
// to skip those copies (RunOptions): such a run has its own recording per set of skipped copies,
// so that a recording that makes a copy is never replayed by a run that skips it, and back.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <atomic>

#include "core/human_bytes.h"
#include "core/memory_budget.h"
#include "engine/native/exec/graph_region.h"
#include "engine/native/exec/plan.h"
#include "engine/native/backend.h"
#include "engine/native/session.h"

namespace sd::native {
namespace {

class Session final : public NativeSession {
 public:
  // One recording of a plan's device steps, for one set of skipped copies.
  struct Recording {
    std::unique_ptr<BackendGraph> graph;
    std::vector<const void*> memory;  // what it was recorded with (current_memory)
  };
  // Per plan: the steps a graph can run, the inputs staged, the copies a run may skip, the recordings.
  struct Replay {
    exec::GraphRegion region;
    std::vector<int> staged_inputs;  // graph inputs a device's copy reads
    std::vector<int> upload_step;    // per graph input: its upload copy a run may skip (-1: none)
    std::vector<std::string> why_not_bound;  // per graph input, where upload_step is -1
    std::vector<int> download_step;  // per output: its copy to the host a run may skip (-1: none)
    // Keyed by the skipped copies (inputs mask, outputs mask) as used: at most one per mode.
    std::map<std::pair<uint64_t, uint64_t>, Recording> recordings;
    std::string failed;               // why recording failed: plain launches from then on
  };

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
    for (size_t b = 0; b < backends_.size(); ++b) {
      raw_backends_.push_back(backends_[b].get());
      SD_ASSIGN_OR_RETURN(auto stream, backends_[b]->create_stream(std::max(1, options_.threads)));
      streams_.push_back(std::move(stream));
      if (backends_[b]->device().is_host()) {
        if (host_ < 0) host_ = static_cast<int>(b);
      } else if (staging_ < 0 && backends_[b]->has_host_staging()) {
        staging_ = static_cast<int>(b);
      }
    }
    arenas_.resize(backends_.size());
    scratch_.resize(backends_.size());
    queued_.assign(backends_.size(), false);
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

  using NativeSession::run;
  Status run(std::span<const TensorRef> inputs, std::vector<HostTensor>& outputs, const RunOptions& options) override {
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
    // A value baked into the plan is read while planning, before the copies to skip are known.
    if (fixed_mask_.empty()) fixed_mask_ = exec::plan_time_inputs(g);
    for (size_t i = 0; i < inputs.size() && i < 64; ++i)
      if (fixed_mask_[i] && (options.inputs_on_device >> i & 1))
        return fail(ErrorCode::kUsage, "input '" + model_->inputs()[i].name + "' must be known when planning: it cannot be written on a device");
    SD_TRY(within_run([&] { return execute(inputs, shapes, options); }));
    // After every backend's end_run: a device's copy of an output into host memory is done.
    const exec::Plan& plan = *last_;
    outputs.resize(plan.output_bufs.size());
    for (size_t i = 0; i < plan.output_bufs.size(); ++i) {
      if (i < 64 && (out_mask_ >> i & 1)) continue;  // read on the device: left as it was
      const ValueType& t = plan.output_types[i];
      HostTensor& out = outputs[i];
      if (out.empty() || out.dtype() != t.dtype || out.shape() != t.shape || out.data() == nullptr) out = HostTensor(t.dtype, t.shape);
      if (out.bytes() > 0) std::memcpy(out.data(), resolve(plan.output_bufs[i]), out.bytes());
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
  Status execute(std::span<const TensorRef> inputs, const std::vector<Shape>& shapes, const RunOptions& options) {
    SD_ASSIGN_OR_RETURN(exec::Plan * plan, plan_for(inputs, shapes));
    SD_TRY(size_memory(*plan, shapes));
    Replay& rp = replay_for(*plan);
    SD_TRY(skipped_copies(*plan, rp, options));
    // The inputs as given, or their page-locked copies where a device reads them.
    input_ptrs_.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) input_ptrs_[i] = inputs[i].data;
    if (input_staging_.size() < inputs.size()) input_staging_.resize(inputs.size());
    for (int i : rp.staged_inputs) {
      const auto k = static_cast<size_t>(i);
      SD_TRY(ensure(input_staging_[k], inputs[k].bytes(), static_cast<size_t>(staging_), "input staging", true));
      // Not when the caller wrote it there (input_staging()), nor when it wrote the device's copy.
      if (inputs[k].bytes() > 0 && inputs[k].data != input_staging_[k].data() && !(k < 64 && (in_mask_ >> k & 1)))
        std::memcpy(input_staging_[k].data(), inputs[k].data, inputs[k].bytes());
      input_ptrs_[k] = input_staging_[k].data();
    }
    // The profile leaves out each plan's first run (page faults on a fresh arena, lazy setup), and
    // times steps one by one (no graph). A plan's first run is plain too: it warms up what its
    // kernels set up lazily before anything is recorded.
    const int64_t run_index = plan->runs++;
    const bool timed = profile_ && run_index > 0;
    if (timed) ++runs_;
    const bool use_graph = options_.cuda_graphs && !profile_ && run_index > 0 && rp.region.why_not.empty() && rp.failed.empty();
    std::fill(queued_.begin(), queued_.end(), false);
    for (size_t i = 0; i < plan->steps.size(); ++i) {
      if (use_graph && i == rp.region.first) {
        SD_TRY(run_graph(*plan, rp));
        i = rp.region.last;
        continue;
      }
      if (skip_[i]) continue;
      SD_TRY(run_step(*plan, i, timed));
    }
    return ok();
  }

  // Every backend's arena and scratch at least as large as the plan needs.
  Status size_memory(const exec::Plan& plan, const std::vector<Shape>& shapes) {
    SD_TRY(check_memory(plan, shapes));
    for (size_t b = 0; b < backends_.size(); ++b) {
      // At least 64 bytes (ensure's minimum), so that even empty tensors get a real address.
      SD_TRY(ensure(arenas_[b], plan.memory[b].arena_bytes, b, "arena", static_cast<int>(b) == host_ && staging_ >= 0));
      SD_TRY(ensure(scratch_[b], plan.memory[b].scratch_bytes, b, "scratch", false));
    }
    return ok();
  }

  // This run's skipped copies (skip_ per step, in_mask_ / out_mask_ as honoured): an input
  // flagged on the device must be bindable; an output flagged is skipped where it can be.
  Status skipped_copies(const exec::Plan& plan, const Replay& rp, const RunOptions& options) {
    skip_.assign(plan.steps.size(), false);
    in_mask_ = out_mask_ = 0;
    for (size_t i = 0; i < rp.upload_step.size() && i < 64; ++i) {
      if (!(options.inputs_on_device >> i & 1)) continue;
      if (rp.upload_step[i] < 0)
        return fail(ErrorCode::kUsage, "input '" + model_->inputs()[i].name + "' cannot be written on a device: " + rp.why_not_bound[i]);
      skip_[static_cast<size_t>(rp.upload_step[i])] = true;
      in_mask_ |= uint64_t{1} << i;
    }
    if (const size_t n = rp.upload_step.size(); n < 64 && (options.inputs_on_device >> n) != 0)
      return fail(ErrorCode::kUsage, "inputs_on_device names an input the model does not have");
    for (size_t i = 0; i < rp.download_step.size() && i < 64; ++i) {
      if (!(options.outputs_on_device >> i & 1) || rp.download_step[i] < 0) continue;
      skip_[static_cast<size_t>(rp.download_step[i])] = true;
      out_mask_ |= uint64_t{1} << i;
    }
    return ok();
  }

  Status run_step(exec::Plan& plan, size_t i, bool timed) {
    exec::Step& st = plan.steps[i];
    const auto b = static_cast<size_t>(st.backend);
    // A host step may read what a device's copy wrote, or write what one still reads.
    if (backends_[b]->device().is_host()) SD_TRY(wait_for_devices());
    for (size_t k = 0; k < st.in_bufs.size(); ++k) st.in_refs[k].data = resolve(st.in_bufs[k]);
    for (size_t k = 0; k < st.out_bufs.size(); ++k) st.out_refs[k].data = resolve(st.out_bufs[k]);
    const ExecContext ctx{streams_[b]->threads(), scratch_[b].bytes_ptr(), streams_[b].get()};
    auto t0 = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    Status status = st.kernel->run(st.in_refs, st.out_refs, ctx);
    // A device step is timed to its end, not to its launch: the profile waits for the stream
    // (each step's wait costs a few microseconds more than a replay would spend).
    if (timed && status && !backends_[b]->device().is_host()) status = backends_[b]->wait(*streams_[b]);
    if (timed) {
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const std::string impl = st.kernel->implementation();
      step_ms_[impl.empty() ? st.label : st.label + " [" + impl + "]"] += ms;
    }
    if (!backends_[b]->device().is_host()) queued_[b] = true;
    if (!status) return fail(status.error().code, st.label + ": " + status.error().message);
    return ok();
  }

  Status wait_for_devices() {
    for (size_t b = 0; b < backends_.size(); ++b)
      if (queued_[b]) {
        queued_[b] = false;
        SD_TRY(backends_[b]->wait(*streams_[b]));
      }
    return ok();
  }

  // The plan's device steps as one recorded graph: recorded now when there is none, or when the
  // memory it was recorded with has moved (an arena grew for a larger plan); then replayed. A
  // recording that fails runs the steps as plain launches, now and in every later run.
  Status run_graph(exec::Plan& plan, Replay& rp) {
    const auto d = static_cast<size_t>(rp.region.backend);
    const Backend& device = *backends_[d];
    current_memory(rp, memory_now_);
    Recording& rec = rp.recordings[{in_mask_, out_mask_}];
    if (rec.graph && rec.memory != memory_now_) rec.graph.reset();
    if (!rec.graph) {
      Status recorded = record(plan, rp, rec);
      if (!recorded) {
        rp.failed = recorded.error().message;
        static std::atomic<bool> said{false};
        if (!said.exchange(true))
          std::fprintf(stderr, "streamdet: warning: %s: recording the run as a graph failed (%s); its kernels are launched one by one\n",
                       device.name().c_str(), rp.failed.c_str());
        for (size_t i = rp.region.first; i <= rp.region.last; ++i)
          if (!skip_[i]) SD_TRY(run_step(plan, i, false));
        return ok();
      }
      rec.memory = memory_now_;
    }
    queued_[d] = true;
    Status replayed = device.replay(*rec.graph, *streams_[d]);
    if (!replayed) return fail(replayed.error().code, device.name() + " replaying the run's graph: " + replayed.error().message);
    return ok();
  }

  // The region's steps less this run's skipped copies.
  Status record(exec::Plan& plan, const Replay& rp, Recording& rec) {
    const auto d = static_cast<size_t>(rp.region.backend);
    const Backend& device = *backends_[d];
    SD_TRY(device.begin_capture(*streams_[d]));
    Status steps = ok();
    for (size_t i = rp.region.first; i <= rp.region.last && steps; ++i)
      if (!skip_[i]) steps = run_step(plan, i, false);
    auto graph = device.end_capture(*streams_[d]);
    queued_[d] = false;  // recorded, not queued
    if (!steps) return steps;
    if (!graph) return tl::unexpected(graph.error());
    rec.graph = std::move(*graph);
    return ok();
  }

  // What a recording bakes in: every backend's arena and scratch, and the staged inputs.
  void current_memory(const Replay& rp, std::vector<const void*>& out) const {
    out.clear();
    for (size_t b = 0; b < backends_.size(); ++b) out.push_back(arenas_[b].data()), out.push_back(scratch_[b].data());
    for (int i : rp.staged_inputs) out.push_back(input_staging_[static_cast<size_t>(i)].data());
  }

  // A buffer's address in this run (input_ptrs_: the inputs, or their staged copies).
  void* resolve(const exec::BufferRef& b) const {
    switch (b.kind) {
      case exec::BufferRef::Kind::kArena: return arenas_[static_cast<size_t>(b.backend)].bytes_ptr() + b.offset;
      case exec::BufferRef::Kind::kInput: return input_ptrs_[static_cast<size_t>(b.input)];
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
    const Replay& rp = replay_for(*plan);
    if (!options_.cuda_graphs) summary.graph = "off";
    else if (profile_) summary.graph = "off: the engine profile times each step";
    else if (!rp.region.why_not.empty()) summary.graph = "none: " + rp.region.why_not;
    else if (!rp.failed.empty()) summary.graph = "none: recording failed (" + rp.failed + "): plain launches";
    else
      summary.graph = "steps " + std::to_string(rp.region.first + 1) + "-" + std::to_string(rp.region.last + 1) + " recorded on " +
                      backends_[static_cast<size_t>(rp.region.backend)]->name() + " once, replayed every run";
    return summary;
  }

  Result<void*> input_staging(size_t i, size_t bytes) override {
    if (i >= model_->inputs().size()) return fail(ErrorCode::kUsage, "the model has no input " + std::to_string(i));
    if (staging_ < 0) return nullptr;
    if (input_staging_.size() < model_->inputs().size()) input_staging_.resize(model_->inputs().size());
    SD_TRY(ensure(input_staging_[i], bytes, static_cast<size_t>(staging_), "input staging", true));
    return input_staging_[i].data();
  }

  Result<DeviceInput> device_input(size_t i, const std::vector<Shape>& input_shapes) override {
    const Graph& g = model_->graph();
    if (i >= g.inputs.size()) return fail(ErrorCode::kUsage, "the model has no input " + std::to_string(i));
    if (input_shapes.size() != g.inputs.size())
      return fail(ErrorCode::kUsage, "the model takes " + std::to_string(g.inputs.size()) + " inputs, got " + std::to_string(input_shapes.size()));
    if (fixed_mask_.empty()) fixed_mask_ = exec::plan_time_inputs(g);
    DeviceInput out;
    if (fixed_mask_[i]) {
      out.why_not = "input '" + model_->inputs()[i].name + "' must be known when planning";
      return out;
    }
    std::vector<TensorRef> refs;
    for (size_t k = 0; k < input_shapes.size(); ++k) refs.push_back(TensorRef{model_->inputs()[k].dtype, input_shapes[k], nullptr});
    // Planning moves last_ (the plan of the last run), which device_output reads: put it back.
    exec::Plan* const last = last_;
    exec::Plan* plan = nullptr;
    shapes_ = input_shapes;
    Status planned = within_run([&]() -> Status {
      SD_ASSIGN_OR_RETURN(plan, plan_for(refs, shapes_));
      return size_memory(*plan, shapes_);
    });
    last_ = last;
    SD_TRY(planned);
    const Replay& rp = replay_for(*plan);
    if (rp.upload_step[i] < 0) {
      out.why_not = rp.why_not_bound[i];
      return out;
    }
    const exec::Step& st = plan->steps[static_cast<size_t>(rp.upload_step[i])];
    const auto b = static_cast<size_t>(st.backend);
    out.data = resolve(st.out_bufs[0]);
    out.dtype = st.out_refs[0].dtype;
    out.shape = st.out_refs[0].shape;
    out.backend = backends_[b]->name();
    out.stream = streams_[b]->native_handle();
    return out;
  }

  Result<DeviceOutput> device_output(size_t i) const override {
    if (!last_) return fail(ErrorCode::kUsage, "device_output: the session has not run");
    if (i >= last_->output_bufs.size()) return fail(ErrorCode::kUsage, "the model has no output " + std::to_string(i));
    const exec::BufferRef& host = last_->output_bufs[i];
    DeviceOutput out;
    out.shape = last_->output_types[i].shape;
    // The last step writing the output's host buffer (arena memory is shared: only the last
    // counts) must be a copy from a device backend's arena.
    const auto same = [&](const exec::BufferRef& o) {
      return o.kind == host.kind && o.backend == host.backend && o.offset == host.offset && o.input == host.input;
    };
    for (auto st = last_->steps.rbegin(); st != last_->steps.rend(); ++st) {
      if (std::none_of(st->out_bufs.begin(), st->out_bufs.end(), same)) continue;
      if (!st->copy || st->in_bufs.size() != 1 || st->in_bufs[0].kind != exec::BufferRef::Kind::kArena) break;
      const exec::BufferRef& src = st->in_bufs[0];
      const auto b = static_cast<size_t>(src.backend);
      if (backends_[b]->device().is_host() || st->in_refs[0].shape != out.shape) break;
      out.data = resolve(src);
      out.dtype = st->in_refs[0].dtype;
      out.backend = backends_[b]->name();
      return out;
    }
    return out;
  }

  Status output_to_host(size_t i, HostTensor& out) override {
    if (!last_) return fail(ErrorCode::kUsage, "output_to_host: the session has not run");
    exec::Plan& plan = *last_;
    if (i >= plan.output_bufs.size()) return fail(ErrorCode::kUsage, "the model has no output " + std::to_string(i));
    if (i < 64 && (out_mask_ >> i & 1)) {
      const Replay& rp = replay_for(plan);
      const auto step = static_cast<size_t>(rp.download_step[i]);
      // Only this copy: what it reads (the device's output) lives to the end of the run.
      SD_TRY(within_run([&] { return run_step(plan, step, false); }));
      out_mask_ &= ~(uint64_t{1} << i);
    }
    const ValueType& t = plan.output_types[i];
    if (out.empty() || out.dtype() != t.dtype || out.shape() != t.shape || out.data() == nullptr) out = HostTensor(t.dtype, t.shape);
    if (out.bytes() > 0) std::memcpy(out.data(), resolve(plan.output_bufs[i]), out.bytes());
    return ok();
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
      po.threads = options_.threads;
      po.concat_in_place = options_.concat_in_place;
      auto built = exec::build_plan(g, types, builtin_op_registry(), raw_backends_, fixed, po);
      if (!built) return tl::unexpected(built.error());
      it = plans_.emplace(key, std::move(*built)).first;
    }
    last_ = it->second.get();
    return last_;
  }

  // A buffer of the backend's memory (host: its page-locked host memory) at least `bytes` long,
  // kept when large enough.
  Status ensure(DeviceBuffer& buffer, size_t bytes, size_t backend, const char* what, bool host) {
    if (buffer && buffer.bytes() >= bytes) return ok();
    buffer.reset();
    if (host) backend = static_cast<size_t>(staging_);
    auto got = host ? backends_[backend]->allocate_host(std::max<size_t>(bytes, 64)) : backends_[backend]->allocate(std::max<size_t>(bytes, 64));
    if (!got) return fail(got.error().code, backends_[backend]->name() + " " + what + ": " + got.error().message);
    buffer = std::move(*got);
    return ok();
  }

  Replay& replay_for(const exec::Plan& plan) {
    auto it = replays_.find(&plan);
    if (it != replays_.end()) return it->second;
    Replay& rp = replays_[&plan];
    rp.region = exec::graph_region(plan);
    if (staging_ >= 0)
      for (const exec::Step& st : plan.steps) {
        if (!st.copy || backends_[static_cast<size_t>(st.backend)]->device().is_host()) continue;
        for (const auto& b : st.in_bufs)
          if (b.kind == exec::BufferRef::Kind::kInput &&
              std::find(rp.staged_inputs.begin(), rp.staged_inputs.end(), b.input) == rp.staged_inputs.end())
            rp.staged_inputs.push_back(b.input);
      }
    // Without staging a graph input is read where the caller has it, which moves between runs.
    if (rp.region.why_not.empty() && staging_ < 0)
      for (const exec::Step& st : plan.steps)
        for (const auto& b : st.in_bufs)
          if (b.kind == exec::BufferRef::Kind::kInput && st.backend == rp.region.backend) rp.region.why_not = "no page-locked staging for the inputs";
    for (size_t i = 0; i < model_->inputs().size(); ++i) {
      std::string why;
      rp.upload_step.push_back(upload_step(plan, static_cast<int>(i), why));
      rp.why_not_bound.push_back(std::move(why));
    }
    for (size_t o = 0; o < plan.output_bufs.size(); ++o) rp.download_step.push_back(download_step(plan, o));
    return rp;
  }

  static bool same_buffer(const exec::BufferRef& a, const exec::BufferRef& b) {
    return a.kind == b.kind && a.backend == b.backend && a.offset == b.offset && a.input == b.input;
  }

  // The step that uploads graph input `i` to a device where a caller may write it instead: its
  // only reader, a copy into a device's arena, whose destination no earlier step writes.
  int upload_step(const exec::Plan& plan, int i, std::string& why) const {
    const std::string name = "input '" + model_->inputs()[static_cast<size_t>(i)].name + "'";
    int found = -1;
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      const exec::Step& st = plan.steps[s];
      const bool reads = std::any_of(st.in_bufs.begin(), st.in_bufs.end(),
                                     [&](const exec::BufferRef& b) { return b.kind == exec::BufferRef::Kind::kInput && b.input == i; });
      if (!reads) continue;
      const Backend& backend = *backends_[static_cast<size_t>(st.backend)];
      if (backend.device().is_host() || !st.copy) {
        why = name + " is read by " + st.label + " on " + backend.name();
        return -1;
      }
      if (found >= 0) {
        why = name + " is read by two steps (" + plan.steps[static_cast<size_t>(found)].label + ", " + st.label + ")";
        return -1;
      }
      found = static_cast<int>(s);
    }
    if (found < 0) {
      why = name + " is not read by a device";
      return -1;
    }
    const exec::Step& up = plan.steps[static_cast<size_t>(found)];
    const exec::BufferRef& dst = up.out_bufs[0];
    if (dst.kind != exec::BufferRef::Kind::kArena) {
      why = name + ": its copy on the device is not in the device's arena";
      return -1;
    }
    // Arena memory is shared by lifetime: a step before the upload may use the same bytes.
    const size_t begin = dst.offset, end = dst.offset + up.out_refs[0].bytes();
    for (int s = 0; s < found; ++s)
      for (size_t k = 0; k < plan.steps[static_cast<size_t>(s)].out_bufs.size(); ++k) {
        const exec::BufferRef& o = plan.steps[static_cast<size_t>(s)].out_bufs[k];
        const size_t o_end = o.offset + plan.steps[static_cast<size_t>(s)].out_refs[k].bytes();
        if (o.kind == exec::BufferRef::Kind::kArena && o.backend == dst.backend && o.offset < end && begin < o_end) {
          why = name + ": its place on the device is written by " + plan.steps[static_cast<size_t>(s)].label + " before the upload";
          return -1;
        }
      }
    return found;
  }

  // The copy that brings output `o` from a device's arena to the host where a run may skip it:
  // the last step writing its host buffer, read by no later step and not the host buffer of
  // another output (that one would go stale too).
  int download_step(const exec::Plan& plan, size_t o) const {
    const exec::BufferRef& host = plan.output_bufs[o];
    for (size_t j = 0; j < plan.output_bufs.size(); ++j)
      if (j != o && same_buffer(plan.output_bufs[j], host)) return -1;
    for (size_t s = plan.steps.size(); s-- > 0;) {
      const exec::Step& st = plan.steps[s];
      if (std::none_of(st.out_bufs.begin(), st.out_bufs.end(), [&](const exec::BufferRef& b) { return same_buffer(b, host); })) continue;
      if (!st.copy || st.in_bufs.size() != 1 || st.in_bufs[0].kind != exec::BufferRef::Kind::kArena ||
          backends_[static_cast<size_t>(st.in_bufs[0].backend)]->device().is_host())
        return -1;
      for (size_t later = s + 1; later < plan.steps.size(); ++later)
        for (const auto& b : plan.steps[later].in_bufs)
          if (same_buffer(b, host)) return -1;
      return static_cast<int>(s);
    }
    return -1;
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
  int host_ = -1;                          // the host's backend
  int staging_ = -1;                       // the device backend whose page-locked memory stages host data
  std::vector<DeviceBuffer> input_staging_;  // per graph input, where a device reads it
  std::vector<void*> input_ptrs_;            // this run's inputs (or their staged copies)
  std::vector<bool> queued_;                 // per backend: work queued since the last wait
  std::vector<const void*> memory_now_;
  std::vector<bool> skip_;                   // per step of this run's plan: a copy the run skips
  uint64_t in_mask_ = 0, out_mask_ = 0;      // this run's inputs written and outputs read on the device
  // After the plans and their buffers: recordings go first.
  std::map<const exec::Plan*, Replay> replays_;
};

}  // namespace

Result<std::unique_ptr<NativeSession>> NativeSession::create(std::shared_ptr<const NativeModel> model, const SessionOptions& options) {
  if (!model) return fail(ErrorCode::kUsage, "no model");
  auto session = std::make_unique<Session>(std::move(model), options);
  SD_TRY(session->init());
  return std::unique_ptr<NativeSession>(std::move(session));
}

}  // namespace sd::native
