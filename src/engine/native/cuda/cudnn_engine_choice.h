// Which cuDNN engine runs a Conv/FusedConv node: the legacy API's (cudnn_conv.cpp: convolution,
// then our bias + post-op epilogue kernel) or the backend graph API's (cudnn_graph_conv.cpp: one
// fused operation graph). Both are planned and probed; where both pass, each is timed at the
// node's real shape (a warm-up, then alternating runs on the legacy stream, medians) and the
// faster is kept (choose_cudnn_engine, cudnn_graph_rules.h). The kept kernel's implementation()
// says which engine and, in parentheses, why not the other: "cudnn-graph:eng31/nhwc_filter/fp16
// (0.081 ms; cudnn:implicit_precomp_gemm/nhwc_filter/fp16 0.120 ms)",
// "cudnn:implicit_gemm (cudnn-graph: post op HardSwish has no cuDNN pointwise form here)".
#pragma once

#include <cstdint>
#include <memory>

#include "core/error.h"
#include "engine/native/cuda/conv.h"
#include "engine/native/op_registry.h"

namespace sd::native::cuda {

// The graph engine's plan-time work (cuDNN's runtime-fusion engines may compile their kernel when
// the plan is finalized, for every node and again for the probe's batch-1 plan) is capped per
// process: once this much wall time went into it, further nodes keep the legacy engine, their
// note saying so ("cudnn-graph: this process's graph planning budget is spent"). Every node's note
// gives its own graph planning time ("graph planned in 0.42 s"). Unmeasured on a GPU so far: the
// cap keeps a slow first run within the GPU check's step limits. Plans, probe verdicts
// (cudnn_graph_conv.cpp) and measured choices are cached per process by what defines the node,
// so a model planned again (another session or worker, the same batch again) costs little and
// keeps the same engine ("...; chosen before").
// Off by default (0: the legacy engine alone, as before the graph engine was written) until a
// GPU run proves the graph engine: unproven code that executes on the device could lose the
// context, which no fallback undoes. The GPU check turns it on (--cudnn-graph-budget, 60 s).
inline constexpr int64_t kCudnnGraphPlanningBudgetUs = 0;

// The cap for this process from now on (tools: the GPU check gives its own, --cudnn-graph-budget).
void set_cudnn_graph_planning_budget(double seconds);
// The cap as set (seconds; 0: off) and the planning time this process has spent so far.
double cudnn_graph_planning_budget();
double cudnn_graph_planning_spent();
// This many seconds more than what is spent so far (0: off), for one part of a run: the GPU
// check gives each of its parts (conformance, models, timing, ...) its own grant, so that the
// conformance's hundreds of random geometries do not leave the models none (GPU run 4).
void grant_cudnn_graph_planning(double seconds);

// Errors: neither engine runs the node; the message names both problems ("cudnn: ...;
// cudnn-graph: ..."), and conv_ops.cpp runs it on the direct kernel.
Result<std::unique_ptr<Kernel>> create_fastest_cudnn_conv(const OpContext& ctx, const ConvParams& p, bool bias, bool sum);

}  // namespace sd::native::cuda
