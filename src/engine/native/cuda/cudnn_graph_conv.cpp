#include "engine/native/cuda/cudnn_graph_conv.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/native/backend.h"
#include "engine/native/conv_attrs.h"
#include "engine/native/cuda/cuda_check.h"
#include "engine/native/cuda/cudnn_conv.h"
#include "engine/native/cuda/cudnn_graph_rules.h"
#include "engine/native/cuda/cudnn_library.h"
#include "engine/native/cuda/cudnn_support.h"

namespace sd::native::cuda {
namespace {

// One backend descriptor, destroyed with this object.
class BackendDescriptor {
 public:
  BackendDescriptor() = default;
  BackendDescriptor(BackendDescriptor&& o) noexcept : lib_(o.lib_), d_(std::exchange(o.d_, nullptr)) {}
  BackendDescriptor& operator=(BackendDescriptor&& o) noexcept {
    if (this != &o) {
      reset();
      lib_ = o.lib_, d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;
  ~BackendDescriptor() { reset(); }

  static Result<BackendDescriptor> create(const CudnnLibrary& lib, cudnnBackendDescriptorType_t type, const char* what) {
    BackendDescriptor d;
    d.lib_ = &lib;
    SD_TRY(lib.check(lib.api().BackendCreateDescriptor(type, &d.d_), (std::string("cudnnBackendCreateDescriptor(") + what + ")").c_str()));
    return d;
  }
  cudnnBackendDescriptor_t get() const { return d_; }
  // what: the attribute's name, for the error.
  Status set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* values, const char* what) const {
    return lib_->check(lib_->api().BackendSetAttribute(d_, name, type, count, values), (std::string("cudnnBackendSetAttribute(") + what + ")").c_str());
  }
  Status finalize(const char* what) const {
    return lib_->check(lib_->api().BackendFinalize(d_), (std::string("cudnnBackendFinalize(") + what + ")").c_str());
  }

 private:
  void reset() {
    if (d_) lib_->api().BackendDestroyDescriptor(d_);
    d_ = nullptr;
  }
  const CudnnLibrary* lib_ = nullptr;
  cudnnBackendDescriptor_t d_ = nullptr;
};

#define SD_SET(desc, attr, type, count, values) SD_TRY((desc).set(attr, type, count, values, #attr))

// The graph's tensors' ids (CUDNN_ATTR_TENSOR_UNIQUE_ID), the variant pack's keys.
enum : int64_t { kUidX = 1, kUidW = 2, kUidY = 3, kUidBias = 4, kUidSum = 5, kUidVirtual = 100 };

// A 4-d tensor descriptor: dims {n, c, h, w} whatever the layout, strides in elements.
Result<BackendDescriptor> tensor(const CudnnLibrary& lib, int64_t uid, const std::array<int, 4>& dims, const std::array<int, 4>& strides,
                                 cudnnDataType_t type, bool is_virtual) {
  SD_ASSIGN_OR_RETURN(BackendDescriptor t, BackendDescriptor::create(lib, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor"));
  const int64_t d[4] = {dims[0], dims[1], dims[2], dims[3]}, s[4] = {strides[0], strides[1], strides[2], strides[3]};
  const int64_t alignment = 16;  // run() hands the graph 16-byte aligned pointers only
  const bool v = is_virtual;
  SD_SET(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  SD_SET(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, d);
  SD_SET(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, s);
  SD_SET(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  SD_SET(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  SD_SET(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v);
  SD_TRY(t.finalize("tensor"));
  return t;
}

// A finalized execution plan and every descriptor it was made from (kept for the plan's life).
struct GraphPlan {
  std::vector<BackendDescriptor> parts;
  BackendDescriptor plan;
  int64_t workspace = 0;
  int64_t engine = -1;  // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
};

// A heuristics' engine config's engine: its global index (-1 where cuDNN does not say) and its
// numerical notes.
struct EngineInfo {
  int64_t index = -1;
  std::vector<cudnnBackendNumericalNote_t> notes;
};

EngineInfo engine_info(const CudnnLibrary& lib, const BackendDescriptor& config) {
  EngineInfo info;
  auto engine = BackendDescriptor::create(lib, CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine");
  if (!engine) return info;
  cudnnBackendDescriptor_t e = engine->get();
  int64_t count = 0, index = -1;
  if (lib.api().BackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &e) != CUDNN_STATUS_SUCCESS ||
      count != 1)
    return info;
  if (lib.api().BackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count, &index) == CUDNN_STATUS_SUCCESS && count == 1)
    info.index = index;
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (lib.api().BackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes) ==
      CUDNN_STATUS_SUCCESS)
    info.notes.assign(notes, notes + std::clamp<int64_t>(count, 0, CUDNN_NUMERICAL_NOTE_TYPE_COUNT));
  return info;
}

// The engine configs cuDNN's heuristics in `mode` propose for the graph, best first.
Result<std::vector<BackendDescriptor>> heuristics(const CudnnLibrary& lib, cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode) {
  SD_ASSIGN_OR_RETURN(BackendDescriptor heur, BackendDescriptor::create(lib, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristics"));
  SD_SET(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
  SD_SET(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  SD_TRY(heur.finalize("engine heuristics"));
  int64_t count = 0;
  SD_TRY(lib.check(lib.api().BackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                   "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS count)"));
  std::vector<BackendDescriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    SD_ASSIGN_OR_RETURN(BackendDescriptor c, BackendDescriptor::create(lib, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config"));
    raw.push_back(c.get());
    configs.push_back(std::move(c));
  }
  if (count == 0) return configs;
  int64_t returned = 0;
  SD_TRY(lib.check(lib.api().BackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, raw.data()),
                   "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS)"));
  if (returned < count) configs.resize(static_cast<size_t>(std::max<int64_t>(returned, 0)));
  return configs;
}

// At most this many engine configs are tried per graph: a runtime-compiled engine's plan can take
// a noticeable time to finalize, and the heuristics' first few are the ones worth having.
constexpr int kMaxConfigsTried = 8;

// The node's operations at shape s, finalized, into g.parts (no handle needed): convolution
// forward, then one pointwise operation per step, float32 virtual tensors between them.
Result<std::vector<cudnnBackendDescriptor_t>> build_operations(const CudnnLibrary& lib, const CudnnConvShape& s, bool filter_nhwc, bool half,
                                                               const std::vector<CudnnPointwiseStep>& steps, GraphPlan& g) {
  const cudnnDataType_t data = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
  auto keep = [&](BackendDescriptor d) -> cudnnBackendDescriptor_t {
    g.parts.push_back(std::move(d));
    return g.parts.back().get();
  };
  const auto& w = s.w_dims;  // [k, c/g, kh, kw]
  const std::array<int, 4> w_strides = filter_nhwc ? std::array<int, 4>{w[2] * w[3] * w[1], 1, w[3] * w[1], w[1]}
                                                   : std::array<int, 4>{w[1] * w[2] * w[3], w[2] * w[3], w[3], 1};
  const int k = s.y_dims[1];
  SD_ASSIGN_OR_RETURN(BackendDescriptor tx, tensor(lib, kUidX, s.x_dims, s.x_strides, data, false));
  SD_ASSIGN_OR_RETURN(BackendDescriptor tw, tensor(lib, kUidW, s.w_dims, w_strides, data, false));
  cudnnBackendDescriptor_t x = keep(std::move(tx)), wd = keep(std::move(tw));
  // The convolution's output: y itself where nothing follows, else a virtual float32 tensor.
  int64_t next_virtual = kUidVirtual;
  SD_ASSIGN_OR_RETURN(BackendDescriptor tc, steps.empty() ? tensor(lib, kUidY, s.y_dims, s.y_strides, data, false)
                                                          : tensor(lib, next_virtual++, s.y_dims, s.y_strides, compute, true));
  cudnnBackendDescriptor_t current = keep(std::move(tc));

  SD_ASSIGN_OR_RETURN(BackendDescriptor conv, BackendDescriptor::create(lib, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "convolution"));
  {
    const int64_t dims = 2, dilation[2] = {s.dilation_h, s.dilation_w}, stride[2] = {s.stride_h, s.stride_w}, pad[2] = {s.pad_h, s.pad_w};
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;  // what ONNX's Conv computes
    SD_SET(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    SD_SET(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    SD_SET(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims);
    SD_SET(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation);
    SD_SET(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride);
    SD_SET(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
    SD_SET(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
    SD_TRY(conv.finalize("convolution"));
  }
  cudnnBackendDescriptor_t conv_desc = keep(std::move(conv));
  std::vector<cudnnBackendDescriptor_t> ops;
  {
    SD_ASSIGN_OR_RETURN(BackendDescriptor op, BackendDescriptor::create(lib, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, "convolution forward"));
    const float alpha = 1.f, beta = 0.f;
    SD_SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    SD_SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &wd);
    SD_SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &current);
    SD_SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv_desc);
    SD_SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    SD_SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    SD_TRY(op.finalize("convolution forward"));
    ops.push_back(keep(std::move(op)));
  }
  cudnnBackendDescriptor_t bias = nullptr, sum = nullptr;
  for (size_t i = 0; i < steps.size(); ++i) {
    const CudnnPointwiseStep& st = steps[i];
    SD_ASSIGN_OR_RETURN(BackendDescriptor pw, BackendDescriptor::create(lib, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise"));
    SD_SET(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &st.mode);
    SD_SET(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    if (st.mode == CUDNN_POINTWISE_RELU_FWD) {
      SD_SET(pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_DOUBLE, 1, &st.lower_clip);
      SD_SET(pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_DOUBLE, 1, &st.upper_clip);
      SD_SET(pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, CUDNN_TYPE_DOUBLE, 1, &st.lower_clip_slope);
    }
    if (st.mode == CUDNN_POINTWISE_SWISH_FWD) SD_SET(pw, CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_DOUBLE, 1, &st.swish_beta);
    SD_TRY(pw.finalize("pointwise"));
    cudnnBackendDescriptor_t pw_desc = keep(std::move(pw));
    const bool last = i + 1 == steps.size();
    SD_ASSIGN_OR_RETURN(BackendDescriptor ty, last ? tensor(lib, kUidY, s.y_dims, s.y_strides, data, false)
                                                   : tensor(lib, next_virtual++, s.y_dims, s.y_strides, compute, true));
    cudnnBackendDescriptor_t y = keep(std::move(ty));
    SD_ASSIGN_OR_RETURN(BackendDescriptor op, BackendDescriptor::create(lib, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise operation"));
    SD_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw_desc);
    SD_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &current);
    if (st.operand == CudnnPointwiseStep::Operand::kBias) {
      if (!bias) {
        // [1, k, 1, 1], broadcast over n, h, w; laid out as a channels-last tensor.
        SD_ASSIGN_OR_RETURN(BackendDescriptor tb, tensor(lib, kUidBias, {1, k, 1, 1}, {k, 1, k, k}, data, false));
        bias = keep(std::move(tb));
      }
      SD_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bias);
    } else if (st.operand == CudnnPointwiseStep::Operand::kSum) {
      if (!sum) {
        SD_ASSIGN_OR_RETURN(BackendDescriptor ts, tensor(lib, kUidSum, s.y_dims, s.y_strides, data, false));
        sum = keep(std::move(ts));
      }
      SD_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &sum);
    }
    SD_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    SD_TRY(op.finalize("pointwise operation"));
    ops.push_back(keep(std::move(op)));
    current = y;
  }
  return ops;
}

// The node's operation graph at shape s and a plan for it. wanted_engine >= 0: only that engine
// (the probe's plan at batch 1 runs the engine the node's plan has). `tried` collects, per engine
// config that did not make a plan, why ("eng3: ...").
Result<GraphPlan> build_plan(const CudnnLibrary& lib, SharedHandle& handle, const CudnnConvShape& s, bool filter_nhwc, bool half,
                             const std::vector<CudnnPointwiseStep>& steps, int64_t wanted_engine, std::string& tried) {
  GraphPlan g;
  SD_ASSIGN_OR_RETURN(const std::vector<cudnnBackendDescriptor_t> ops, build_operations(lib, s, filter_nhwc, half, steps, g));
  // The graph, its heuristics and the plan use the handle: under its mutex.
  std::lock_guard lock(handle.mutex);
  SD_ASSIGN_OR_RETURN(BackendDescriptor graph, BackendDescriptor::create(lib, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph"));
  SD_SET(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(ops.size()), ops.data());
  SD_SET(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle.handle);
  SD_TRY(graph.finalize("operation graph"));
  const cudnnBackendDescriptor_t graph_desc = graph.get();
  g.parts.push_back(std::move(graph));

  int attempts = 0;
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    auto configs = heuristics(lib, graph_desc, mode);
    if (!configs) {
      tried += std::string(tried.empty() ? "" : "; ") + (mode == CUDNN_HEUR_MODE_A ? "heuristics A: " : "fallback heuristics: ") + configs.error().message;
      continue;
    }
    for (BackendDescriptor& config : *configs) {
      const EngineInfo info = engine_info(lib, config);
      const int64_t engine = info.index;
      if (wanted_engine >= 0 && engine != wanted_engine) continue;
      const std::string name = "eng" + std::to_string(engine);
      // Refused for its arithmetic without a plan (no finalize: not counted as an attempt).
      if (const std::string why = cudnn_engine_refusal(half, info.notes); !why.empty()) {
        tried += (tried.empty() ? "" : "; ") + name + ": " + why;
        continue;
      }
      if (attempts++ == kMaxConfigsTried) break;
      auto plan = BackendDescriptor::create(lib, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
      if (!plan) return tl::unexpected(std::move(plan.error()));
      cudnnBackendDescriptor_t c = config.get();
      Status made = plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle.handle, "CUDNN_ATTR_EXECUTION_PLAN_HANDLE");
      if (made) made = plan->set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c, "CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG");
      if (made) made = plan->finalize("execution plan");
      int64_t workspace = 0, count = 0;
      if (made)
        made = lib.check(lib.api().BackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count, &workspace),
                         "cudnnBackendGetAttribute(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)");
      if (!made) {
        tried += (tried.empty() ? "" : "; ") + name + ": " + made.error().message;
        continue;
      }
      if (workspace < 0 || static_cast<uint64_t>(workspace) > kCudnnMaxWorkspace) {
        tried += (tried.empty() ? "" : "; ") + name + " needs " + std::to_string(workspace >> 20) + " MiB";
        continue;
      }
      g.parts.push_back(std::move(config));
      g.plan = std::move(*plan);
      g.workspace = workspace;
      g.engine = engine;
      return g;
    }
    if (attempts > kMaxConfigsTried) break;
  }
  return fail(ErrorCode::kUnsupported, "no engine config made a plan" + (tried.empty() ? std::string() : " (" + tried + ")"));
}

// One run of a plan: the variant pack with this run's pointers, executed on `stream`.
// Pointers in the node's storage type; bias / sum nullptr where the graph has none.
Status execute(const CudnnLibrary& lib, SharedHandle& handle, const GraphPlan& plan, const void* x, const void* w, const void* bias,
               const void* sum, void* y, void* workspace, void* stream) {
  int64_t uids[5] = {kUidX, kUidW, kUidY};
  void* pointers[5] = {const_cast<void*>(x), const_cast<void*>(w), y};
  int64_t n = 3;
  if (bias) uids[n] = kUidBias, pointers[n++] = const_cast<void*>(bias);
  if (sum) uids[n] = kUidSum, pointers[n++] = const_cast<void*>(sum);
  SD_ASSIGN_OR_RETURN(BackendDescriptor pack, BackendDescriptor::create(lib, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack"));
  SD_SET(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
  SD_SET(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, pointers);
  SD_SET(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  SD_TRY(pack.finalize("variant pack"));
  std::lock_guard lock(handle.mutex);
  SD_CUDNN_TRY(lib, SetStream, handle.handle, static_cast<cudaStream_t>(stream));
  SD_CUDNN_TRY(lib, BackendExecute, handle.handle, plan.plan.get(), pack.get());
  return ok();
}

// Plans by what defines them (device, shapes, layouts, data type, the fused steps, the engine
// asked for), with their probes' verdicts, for the process's life: a model planned again (another
// session, another worker, the same batch again) and the probe's batch-1 plan, which is the
// batch-1 session's, reuse them instead of finalizing (perhaps compiling) and probing again. A
// plan is executed under the shared handle's mutex, so sharing one between kernels is safe.
// Never destroyed, as the handles (a descriptor destroyed at exit would race cuDNN's teardown).
struct CachedPlan {
  std::shared_ptr<const GraphPlan> plan;  // null where no engine config made a plan
  std::string problem;                    // then why
  bool probed = false;                    // the probe's verdict is known (plans made with wanted engine -1)
  std::string probe_problem;              // "" where it passed
};

using PlanCache = ProcessCache<CachedPlan>;
PlanCache& plan_cache() { return process_cache<CachedPlan>(); }

std::string plan_key(const CudnnConvShape& s, bool filter_nhwc, bool half, const std::vector<CudnnPointwiseStep>& steps, int64_t wanted_engine) {
  int device = -1;
  cudaGetDevice(&device);
  std::string key = std::to_string(device) + (filter_nhwc ? "|krsc" : "|kcrs") + (half ? "|fp16|" : "|fp32|") + std::to_string(wanted_engine);
  for (const auto* a : {&s.x_dims, &s.x_strides, &s.y_dims, &s.y_strides, &s.w_dims})
    for (int v : *a) key += "," + std::to_string(v);
  for (int v : {s.pad_h, s.pad_w, s.stride_h, s.stride_w, s.dilation_h, s.dilation_w, s.groups}) key += "," + std::to_string(v);
  char text[160];
  for (const CudnnPointwiseStep& st : steps) {
    std::snprintf(text, sizeof text, "|%d:%d:%a:%a:%a:%a", static_cast<int>(st.mode), static_cast<int>(st.operand), st.lower_clip, st.upper_clip,
                  st.lower_clip_slope, st.swish_beta);
    key += text;
  }
  return key;
}

// The plan cached for this key, or null.
std::shared_ptr<const GraphPlan> plan_if_cached(const std::string& key) {
  PlanCache& cache = plan_cache();
  std::lock_guard lock(cache.mutex);
  auto it = cache.entries.find(key);
  return it == cache.entries.end() ? nullptr : it->second.plan;
}

// The cached plan for this key, made (outside the cache's lock) where there is none yet.
Result<std::shared_ptr<const GraphPlan>> cached_plan(const CudnnLibrary& lib, SharedHandle& handle, const CudnnConvShape& s, bool filter_nhwc,
                                                     bool half, const std::vector<CudnnPointwiseStep>& steps, int64_t wanted_engine) {
  const std::string key = plan_key(s, filter_nhwc, half, steps, wanted_engine);
  PlanCache& cache = plan_cache();
  {
    std::lock_guard lock(cache.mutex);
    auto it = cache.entries.find(key);
    if (it != cache.entries.end()) {
      if (!it->second.plan) return fail(ErrorCode::kUnsupported, it->second.problem);
      return it->second.plan;
    }
  }
  std::string tried;
  auto made = build_plan(lib, handle, s, filter_nhwc, half, steps, wanted_engine, tried);
  // Only a definite answer is kept: no engine config made a plan (kUnsupported); a failed call
  // (kInternal) is tried again by the next kernel.
  if (!made && made.error().code != ErrorCode::kUnsupported) return tl::unexpected(std::move(made.error()));
  std::lock_guard lock(cache.mutex);
  CachedPlan& entry = cache.entries[key];
  if (!entry.plan && entry.problem.empty()) {
    if (made)
      entry.plan = std::make_shared<const GraphPlan>(std::move(*made));
    else
      entry.problem = made.error().message;
  }
  if (!entry.plan) return fail(ErrorCode::kUnsupported, entry.problem);
  return entry.plan;
}

class GraphConvKernel final : public Kernel {
 public:
  GraphConvKernel(const CudnnLibrary& lib, SharedHandle& handle, const ConvParams& p, bool bias, bool sum, bool half,
                  std::vector<CudnnPointwiseStep> steps)
      : lib_(lib), handle_(handle), p_(p), bias_(bias), sum_(sum), half_(half), steps_(std::move(steps)) {}

  Status prepare(const CudnnConvShape& shape, std::span<const float> weights_ohwi) {
    if (!weights_ohwi.empty()) SD_TRY(upload(w_ohwi_, weights_ohwi, half_));
    shape_ = shape;
    SD_ASSIGN_OR_RETURN(plan_, cached_plan(lib_, handle_, shape_, w_ohwi_.p != nullptr, half_, steps_, -1));
    return ok();
  }

  // As the legacy engine's: at batch 1 with the engine the node's plan has where cuDNN makes that
  // plan at batch 1 (the probe's host-side data over a whole batch of 32 took most of 20 s of
  // planning on the H100), else at the node's batch.
  Status probe() {
    const std::string key = plan_key(shape_, w_ohwi_.p != nullptr, half_, steps_, -1);
    PlanCache& cache = plan_cache();
    {
      std::lock_guard lock(cache.mutex);
      auto it = cache.entries.find(key);
      if (it != cache.entries.end() && it->second.probed && it->second.plan == plan_) {
        if (!it->second.probe_problem.empty()) return fail(ErrorCode::kInternal, it->second.probe_problem);
        return ok();
      }
    }
    CudnnConvShape shape1 = shape_;
    shape1.x_dims[0] = shape1.y_dims[0] = 1;
    ConvParams p1 = p_;
    p1.n = 1;
    Result<std::shared_ptr<const GraphPlan>> at1 = fail(ErrorCode::kUnsupported, "batch 1");
    if (p_.n > 1 && plan_->engine >= 0) {
      // A batch-1 session's plan where it has this engine, else one asked for with it.
      auto any = plan_if_cached(plan_key(shape1, w_ohwi_.p != nullptr, half_, steps_, -1));
      at1 = any && any->engine == plan_->engine ? any : cached_plan(lib_, handle_, shape1, w_ohwi_.p != nullptr, half_, steps_, plan_->engine);
    }
    const GraphPlan& plan = at1 ? **at1 : *plan_;
    const ConvParams& p = at1 ? p1 : p_;
    SD_ASSIGN_OR_RETURN(const std::string why,
                        probe_against_direct(p, half_, bias_, sum_, shape_.w_dims, w_ohwi_.p != nullptr, static_cast<size_t>(plan.workspace),
                                             [&](const ProbeBuffers& b) {
                                               return execute(lib_, handle_, plan, b.x, b.w, b.bias, b.sum, b.y, b.workspace, nullptr);
                                             }));
    const std::string problem = why.empty() ? "" : "probe output of " + implementation() + " " + why;
    {
      std::lock_guard lock(cache.mutex);
      auto it = cache.entries.find(key);
      if (it != cache.entries.end() && it->second.plan == plan_) it->second.probed = true, it->second.probe_problem = problem;
    }
    if (!problem.empty()) return fail(ErrorCode::kInternal, problem);
    return ok();
  }

  Status run(std::span<const TensorRef> in, std::span<const TensorRef> out, const ExecContext& ctx) override {
    if (plan_->workspace && !ctx.scratch) return fail(ErrorCode::kInternal, "cuDNN graph convolution without its workspace (no session scratch)");
    void* stream = ctx.stream ? ctx.stream->native_handle() : nullptr;
    const void* w = w_ohwi_.p ? w_ohwi_.p : in[1].data;
    const void* bias = bias_ ? in[2].data : nullptr;
    const void* sum = sum_ ? in[3].data : nullptr;
    // The plan promises cuDNN 16-byte aligned tensors (CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT); a view
    // at another offset (a Split's part) takes the direct kernel, as on the legacy engine.
    if (!aligned16(in[0].data) || !aligned16(w) || !aligned16(out[0].data) || (bias && !aligned16(bias)) || (sum && !aligned16(sum)))
      return run_direct(p_, half_, bias_, sum_, in, out, stream);
    return execute(lib_, handle_, *plan_, in[0].data, w, bias, sum, out[0].data, plan_->workspace ? ctx.scratch : nullptr, stream);
  }
  size_t scratch_bytes() const override { return static_cast<size_t>(plan_->workspace); }
  std::string implementation() const override {
    return "cudnn-graph:eng" + std::to_string(plan_->engine) + (w_ohwi_.p ? "/nhwc_filter" : "") + (half_ ? "/fp16" : "");
  }

 private:
  const CudnnLibrary& lib_;
  SharedHandle& handle_;
  ConvParams p_;
  bool bias_, sum_, half_;
  std::vector<CudnnPointwiseStep> steps_;
  CudnnConvShape shape_{};
  DeviceMemory w_ohwi_;
  std::shared_ptr<const GraphPlan> plan_;  // shared with other kernels of the same plan (plan_cache)
};

#undef SD_SET

}  // namespace

Result<size_t> cudnn_graph_operations(const CudnnLibrary& lib, const CudnnConvShape& shape, bool filter_nhwc, bool half,
                                      const std::vector<CudnnPointwiseStep>& steps) {
  if (!lib.has_backend_api()) return fail(ErrorCode::kUnsupported, lib.backend_api_problem());
  GraphPlan g;
  SD_ASSIGN_OR_RETURN(const std::vector<cudnnBackendDescriptor_t> ops, build_operations(lib, shape, filter_nhwc, half, steps, g));
  return ops.size();
}

Result<std::unique_ptr<Kernel>> create_cudnn_graph_conv_kernel(const ConvParams& p, const CudnnConvShape& shape,
                                                               std::span<const float> weights_ohwi, bool bias, bool sum, bool half) {
  const CudnnLibrary* lib = CudnnLibrary::shared();
  if (!lib) return fail(ErrorCode::kUnsupported, "not loaded");
  if (!lib->has_backend_api()) return fail(ErrorCode::kUnsupported, lib->backend_api_problem());
  SD_ASSIGN_OR_RETURN(std::vector<CudnnPointwiseStep> steps, cudnn_graph_epilogue(p, bias));
  SD_ASSIGN_OR_RETURN(SharedHandle * handle, shared_handle(*lib));
  auto kernel = std::make_unique<GraphConvKernel>(*lib, *handle, p, bias, sum, half, std::move(steps));
  SD_TRY(kernel->prepare(shape, weights_ohwi));
  SD_TRY(kernel->probe());
  return std::unique_ptr<Kernel>(std::move(kernel));
}

Result<std::unique_ptr<Kernel>> create_cudnn_graph_conv(const OpContext& ctx, const ConvParams& p, bool bias, bool sum) {
  SD_ASSIGN_OR_RETURN(const ops::ConvGeometry g, ops::conv_geometry(ctx));
  SD_ASSIGN_OR_RETURN(const CudnnConvShape shape, cudnn_conv_shape(g, p.src_nhwc, p.dst_nhwc));
  const bool half = ctx.inputs[0].dtype == DType::kFloat16;
  const HostTensor* w = ctx.constants.size() > 1 ? ctx.constants[1] : nullptr;
  if (p.src_nhwc && w && w->dtype() == DType::kFloat32) {
    const std::vector<float> ohwi = oihw_to_ohwi(std::span<const float>(w->as<float>(), size_t(w->numel())), shape.w_dims);
    return create_cudnn_graph_conv_kernel(p, shape, ohwi, bias, sum, half);
  }
  return create_cudnn_graph_conv_kernel(p, shape, {}, bias, sum, half);
}

}  // namespace sd::native::cuda
