#include "engine/native/cuda/cudnn_graph_rules.h"

#include <cmath>
#include <cstdio>

#include "engine/native/conv_attrs.h"

namespace sd::native::cuda {

Result<std::vector<CudnnPointwiseStep>> cudnn_graph_epilogue(const ConvParams& p, bool bias) {
  using Operand = CudnnPointwiseStep::Operand;
  std::vector<CudnnPointwiseStep> steps;
  if (bias) steps.push_back({CUDNN_POINTWISE_ADD, Operand::kBias});
  if (p.post_count < 0 || p.post_count > kMaxPostOps) return fail(ErrorCode::kUnsupported, "post op count " + std::to_string(p.post_count));
  for (int k = 0; k < p.post_count; ++k) {
    CudnnPointwiseStep s;
    switch (static_cast<ops::PostKind>(p.post_kind[k])) {
      case ops::PostKind::kRelu: s.mode = CUDNN_POINTWISE_RELU_FWD; break;
      case ops::PostKind::kLeakyRelu:
        s.mode = CUDNN_POINTWISE_RELU_FWD;
        s.lower_clip_slope = p.post_alpha[k];
        break;
      case ops::PostKind::kSilu: s.mode = CUDNN_POINTWISE_SWISH_FWD; break;
      case ops::PostKind::kSigmoid: s.mode = CUDNN_POINTWISE_SIGMOID_FWD; break;
      case ops::PostKind::kClip:
        if (!(p.post_alpha[k] <= p.post_beta[k])) return fail(ErrorCode::kUnsupported, "a Clip with min above max");
        s.mode = CUDNN_POINTWISE_RELU_FWD;
        s.lower_clip = p.post_alpha[k], s.upper_clip = std::min<double>(p.post_beta[k], std::numeric_limits<float>::max());
        break;
      case ops::PostKind::kSum:
        s.mode = CUDNN_POINTWISE_ADD;
        s.operand = Operand::kSum;
        break;
      case ops::PostKind::kHardSwish: return fail(ErrorCode::kUnsupported, "post op HardSwish has no cuDNN pointwise form here");
      default: return fail(ErrorCode::kUnsupported, "post op kind " + std::to_string(p.post_kind[k]) + " unknown");
    }
    steps.push_back(s);
  }
  return steps;
}

std::string describe(const CudnnPointwiseStep& s) {
  switch (s.mode) {
    case CUDNN_POINTWISE_ADD: return s.operand == CudnnPointwiseStep::Operand::kBias ? "add bias" : "add sum";
    case CUDNN_POINTWISE_SWISH_FWD: return "swish";
    case CUDNN_POINTWISE_SIGMOID_FWD: return "sigmoid";
    case CUDNN_POINTWISE_RELU_FWD: {
      char text[96];
      std::snprintf(text, sizeof text, "relu [%g, %g] slope %g", s.lower_clip, s.upper_clip, s.lower_clip_slope);
      return text;
    }
    default: return "pointwise " + std::to_string(static_cast<int>(s.mode));
  }
}

namespace {
std::string ms_text(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", ms);
  return text;
}
bool measured(double ms) { return std::isfinite(ms) && ms > 0; }
}  // namespace

std::string cudnn_graph_dtype_refusal(bool half) { return half ? "" : "float16 nodes only"; }

std::string cudnn_engine_refusal(bool half, std::span<const cudnnBackendNumericalNote_t> notes) {
  for (const cudnnBackendNumericalNote_t n : notes) {
    if (n == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) return "reduces in reduced precision";
    if (half) continue;
    if (n == CUDNN_NUMERICAL_NOTE_TENSOR_CORE) return "tensor cores (TF32) for a float32 node";
    if (n == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return "converts a float32 node's inputs down";
  }
  return {};
}

CudnnEngineChoice choose_cudnn_engine(const CudnnEngineTrial& graph, const CudnnEngineTrial& legacy) {
  using Winner = CudnnEngineChoice::Winner;
  if (!graph.problem.empty() && !legacy.problem.empty())
    return {Winner::kNeither, "cudnn: " + legacy.problem + "; cudnn-graph: " + graph.problem};
  if (!graph.problem.empty()) return {Winner::kLegacy, "cudnn-graph: " + graph.problem};
  if (!legacy.problem.empty()) return {Winner::kGraph, "cudnn: " + legacy.problem};
  // Both usable: measured against each other, an unmeasured one losing.
  if (!measured(graph.ms)) return {Winner::kLegacy, "cudnn-graph: not timed"};
  if (!measured(legacy.ms)) return {Winner::kGraph, "cudnn: not timed"};
  if (graph.ms < legacy.ms) return {Winner::kGraph, ms_text(graph.ms) + "; " + legacy.implementation + " " + ms_text(legacy.ms)};
  return {Winner::kLegacy, ms_text(legacy.ms) + "; " + graph.implementation + " " + ms_text(graph.ms)};
}

}  // namespace sd::native::cuda
