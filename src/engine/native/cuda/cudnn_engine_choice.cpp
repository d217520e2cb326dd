#include "engine/native/cuda/cudnn_engine_choice.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/native/cuda/cuda_check.h"
#include "engine/native/cuda/cudnn_conv.h"
#include "engine/native/cuda/cudnn_graph_conv.h"
#include "engine/native/cuda/cudnn_graph_rules.h"
#include "engine/native/cuda/cudnn_support.h"

namespace sd::native::cuda {
namespace {

// The kept engine's kernel, its implementation() followed by the choice's note.
class ChosenCudnnConvKernel final : public Kernel {
 public:
  ChosenCudnnConvKernel(std::unique_ptr<Kernel> kernel, std::string note) : kernel_(std::move(kernel)), note_(std::move(note)) {}
  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override { return kernel_->run(in, out, ctx); }
  size_t scratch_bytes() const override { return kernel_->scratch_bytes(); }
  std::string implementation() const override { return kernel_->implementation() + " (" + note_ + ")"; }

 private:
  std::unique_ptr<Kernel> kernel_;
  std::string note_;
};

struct CudaEvent {
  cudaEvent_t e = nullptr;
  CudaEvent() = default;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent() {
    if (e) cudaEventDestroy(e);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The kernels run at the node's real shapes (zero-filled tensors: the time of a convolution does
// not depend on its values) on the legacy stream, first one warm-up run each (the graph plan's
// first run at the node's batch thus happens here, not while a session records a CUDA graph),
// then alternating timed runs; their medians in ms, in the kernels' order.
Result<std::vector<double>> time_kernels(const std::vector<Kernel*>& kernels, const OpContext& ctx) {
  std::vector<DeviceMemory> memory(ctx.inputs.size() + 1);
  std::vector<TensorRef> in(ctx.inputs.size());
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const ValueType& t = ctx.inputs[i];
    if (t.dtype == DType::kUndefined) continue;
    const size_t bytes = std::max<size_t>(static_cast<size_t>(t.shape.numel()) * dtype_size(t.dtype), 1);
    SD_CUDA_TRY(cudaMalloc(&memory[i].p, bytes));
    SD_CUDA_TRY(cudaMemset(memory[i].p, 0, bytes));
    in[i] = TensorRef(t.dtype, t.shape, memory[i].p);
  }
  if (ctx.outputs.empty()) return fail(ErrorCode::kInternal, "a convolution without an output");
  const ValueType& o = ctx.outputs[0];
  DeviceMemory& y = memory.back();
  SD_CUDA_TRY(cudaMalloc(&y.p, std::max<size_t>(static_cast<size_t>(o.shape.numel()) * dtype_size(o.dtype), 1)));
  TensorRef out(o.dtype, o.shape, y.p);
  DeviceMemory scratch;
  size_t scratch_bytes = 0;
  for (const Kernel* k : kernels) scratch_bytes = std::max(scratch_bytes, k->scratch_bytes());
  if (scratch_bytes) SD_CUDA_TRY(cudaMalloc(&scratch.p, scratch_bytes));
  const ExecContext ec{1, static_cast<unsigned char*>(scratch.p), nullptr};
  CudaEvent start, stop;
  SD_CUDA_TRY(cudaEventCreate(&start.e));
  SD_CUDA_TRY(cudaEventCreate(&stop.e));
  auto once = [&](Kernel& k) -> Result<double> {
    SD_CUDA_TRY(cudaEventRecord(start.e, nullptr));
    SD_TRY(k.run(in, std::span<const TensorRef>(&out, 1), ec));
    SD_CUDA_TRY(cudaEventRecord(stop.e, nullptr));
    SD_CUDA_TRY(cudaEventSynchronize(stop.e));
    float ms = 0;
    SD_CUDA_TRY(cudaEventElapsedTime(&ms, start.e, stop.e));
    return static_cast<double>(ms);
  };
  for (Kernel* k : kernels) SD_TRY(once(*k));
  constexpr int kRuns = 5;
  std::vector<std::vector<double>> times(kernels.size());
  for (int r = 0; r < kRuns; ++r)
    for (size_t i = 0; i < kernels.size(); ++i) {
      SD_ASSIGN_OR_RETURN(const double t, once(*kernels[i]));
      times[i].push_back(t);
    }
  std::vector<double> medians;
  for (auto& t : times) medians.push_back(median(std::move(t)));
  return medians;
}

// The graph engine's planning (heuristics, plans that may compile a kernel at run time, the
// probe, the timing) spent so far by this process, in microseconds.
std::atomic<int64_t> graph_planning_us{0};
std::atomic<int64_t> graph_planning_budget_us{kCudnnGraphPlanningBudgetUs};

// Choices made where both engines were measured, by what defines the node (its parameters, inputs,
// data type, whether its filter can take the NHWC layout), for the process's life: the same node
// planned again (another session or worker, the same batch again) keeps the same engine without
// being timed again. Never destroyed (like the plans it refers to).
using ChoiceCache = ProcessCache<CudnnEngineChoice>;
ChoiceCache& choice_cache() { return process_cache<CudnnEngineChoice>(); }

std::string node_key(const OpContext& ctx, const ConvParams& p, bool bias, bool sum) {
  int device = -1;
  cudaGetDevice(&device);
  const HostTensor* w = ctx.constants.size() > 1 ? ctx.constants[1] : nullptr;
  std::string key = std::to_string(device) + (ctx.inputs[0].dtype == DType::kFloat16 ? "|fp16" : "|fp32") + (bias ? "|bias" : "") +
                    (sum ? "|sum" : "") + (w && w->dtype() == DType::kFloat32 ? "|const" : "") + (p.src_nhwc ? "|src_nhwc" : "") +
                    (p.dst_nhwc ? "|dst_nhwc" : "");
  for (int64_t v : {p.n, p.c, p.h, p.w, p.oc, p.kh, p.kw, p.oh, p.ow, p.group, p.sh, p.sw, p.dh, p.dw, p.pt, p.pl}) key += "," + std::to_string(v);
  char text[64];
  for (int k = 0; k < p.post_count; ++k) {
    std::snprintf(text, sizeof text, "|%d:%a:%a", p.post_kind[k], static_cast<double>(p.post_alpha[k]), static_cast<double>(p.post_beta[k]));
    key += text;
  }
  return key;
}

}  // namespace

void set_cudnn_graph_planning_budget(double seconds) {
  graph_planning_budget_us = static_cast<int64_t>(std::max(0.0, seconds) * 1e6);
}

double cudnn_graph_planning_budget() { return static_cast<double>(graph_planning_budget_us.load()) * 1e-6; }
double cudnn_graph_planning_spent() { return static_cast<double>(graph_planning_us.load()) * 1e-6; }

void grant_cudnn_graph_planning(double seconds) {
  graph_planning_budget_us = seconds > 0 ? graph_planning_us.load() + static_cast<int64_t>(seconds * 1e6) : 0;
}

Result<std::unique_ptr<Kernel>> create_fastest_cudnn_conv(const OpContext& ctx, const ConvParams& p, bool bias, bool sum) {
  // Off (the default until a GPU run proves the graph engine): the legacy engine alone, as before.
  if (graph_planning_budget_us.load() == 0) return create_cudnn_conv(ctx, p, bias, sum);
  if (const std::string why = cudnn_graph_dtype_refusal(ctx.inputs[0].dtype == DType::kFloat16); !why.empty()) {
    SD_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> legacy, create_cudnn_conv(ctx, p, bias, sum));
    return std::unique_ptr<Kernel>(new ChosenCudnnConvKernel(std::move(legacy), "cudnn-graph: " + why));
  }
  const std::string key = node_key(ctx, p, bias, sum);
  std::optional<CudnnEngineChoice> earlier;
  {
    ChoiceCache& cache = choice_cache();
    std::lock_guard lock(cache.mutex);
    auto it = cache.entries.find(key);
    if (it != cache.entries.end()) earlier = it->second;
  }
  if (earlier) {
    // Only the engine kept before is made (its plan and probe verdict cached where it is the graph's).
    const bool graph_won = earlier->winner == CudnnEngineChoice::Winner::kGraph;
    auto kernel = graph_won ? create_cudnn_graph_conv(ctx, p, bias, sum) : create_cudnn_conv(ctx, p, bias, sum);
    if (kernel) return std::unique_ptr<Kernel>(new ChosenCudnnConvKernel(std::move(*kernel), earlier->note + "; chosen before"));
  }
  auto legacy = create_cudnn_conv(ctx, p, bias, sum);
  const auto t0 = std::chrono::steady_clock::now();
  const bool budget_left = graph_planning_us.load() < graph_planning_budget_us.load();
  Result<std::unique_ptr<Kernel>> graph = budget_left ? create_cudnn_graph_conv(ctx, p, bias, sum)
                                                      : fail(ErrorCode::kUnsupported, "this process's graph planning budget is spent");
  CudnnEngineTrial lt, gt;
  bool measured_both = false;
  if (legacy) lt.implementation = (*legacy)->implementation(); else lt.problem = legacy.error().message;
  if (graph) gt.implementation = (*graph)->implementation(); else gt.problem = graph.error().message;
  if (graph) {
    // Timed against the legacy kernel where both passed their probes; alone otherwise (its first
    // run at the node's batch then still happens here).
    std::vector<Kernel*> kernels{graph->get()};
    if (legacy) kernels.push_back(legacy->get());
    auto times = time_kernels(kernels, ctx);
    if (times) {
      gt.ms = (*times)[0];
      if (legacy) lt.ms = (*times)[1];
      measured_both = legacy.has_value();
    } else {
      // A failed run leaves the graph engine in doubt; the legacy one is the proven path.
      gt.problem = "timing failed: " + times.error().message;
    }
  }
  CudnnEngineChoice choice = choose_cudnn_engine(gt, lt);
  if (budget_left) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
    graph_planning_us += us;
    char text[48];
    std::snprintf(text, sizeof text, "; graph planned in %.2f s", static_cast<double>(us) * 1e-6);
    choice.note += text;
  }
  if (measured_both) {
    ChoiceCache& cache = choice_cache();
    std::lock_guard lock(cache.mutex);
    cache.entries.emplace(key, choice);
  }
  switch (choice.winner) {
    case CudnnEngineChoice::Winner::kGraph: return std::unique_ptr<Kernel>(new ChosenCudnnConvKernel(std::move(*graph), choice.note));
    case CudnnEngineChoice::Winner::kLegacy: return std::unique_ptr<Kernel>(new ChosenCudnnConvKernel(std::move(*legacy), choice.note));
    case CudnnEngineChoice::Winner::kNeither: break;
  }
  return fail(legacy ? ErrorCode::kInternal : legacy.error().code, choice.note);
}

}  // namespace sd::native::cuda
