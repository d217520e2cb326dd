// The host-side rules of the cuDNN graph engine (cudnn_graph_conv.cpp), without a GPU (so the
// host tests check them): how a Conv/FusedConv's bias and post ops become cuDNN backend pointwise
// operations after the convolution, and which of the two cuDNN engines a node keeps.
#pragma once

#include <cudnn.h>

#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/native/cuda/conv.h"

namespace sd::native::cuda {

// One pointwise operation of the fused graph, in the order they apply to the convolution's
// output. ADD takes a second operand, the node's bias ([1, k, 1, 1], broadcast) or its residual
// sum (the output's shape); RELU_FWD carries its clips (CUDNN_ATTR_POINTWISE_RELU_*): ReLU is
// lower 0; LeakyRelu lower 0 with the slope below it; Clip lower alpha and upper beta with slope 0.
struct CudnnPointwiseStep {
  enum class Operand { kNone, kBias, kSum };
  cudnnPointwiseMode_t mode = CUDNN_POINTWISE_ADD;
  Operand operand = Operand::kNone;
  double lower_clip = 0, upper_clip = std::numeric_limits<float>::max(), lower_clip_slope = 0;
  double swish_beta = 1;  // SWISH_FWD: x * sigmoid(beta x), SiLU at 1
  bool operator==(const CudnnPointwiseStep&) const = default;
};

// The bias (where `bias`) then p's post ops as pointwise steps. Errors (kUnsupported, naming the
// post op): one that has no pointwise form here (HardSwish), or an unknown kind; such a node keeps
// the legacy engine (convolution, then our epilogue kernel).
Result<std::vector<CudnnPointwiseStep>> cudnn_graph_epilogue(const ConvParams& p, bool bias);

// "swish", "add bias", ... for the plan's log and the tests.
std::string describe(const CudnnPointwiseStep& s);

// Why an engine config of cuDNN's heuristics is not tried for a node of this data type, from its
// engine's numerical notes (CUDNN_ATTR_ENGINE_NUMERICAL_NOTE); empty where it may be. float32
// nodes keep float32 arithmetic: no tensor-core engine (on Ampere and later that is TF32, 10
// mantissa bits: GPU run 4 saw such engines miss the direct kernel by 1e-3 and the CPU's
// conformance by 3e-4), none that converts its inputs down or reduces in lower precision; the
// tensor cores are fp16's reason to be, but not a reduction in fp16. As PyTorch's cuDNN path with
// TF32 off.
std::string cudnn_engine_refusal(bool half, std::span<const cudnnBackendNumericalNote_t> notes);

// Why a node of this data type is not planned on the graph engine at all; empty for fp16. GPU run 5
// (H200): float32 graphs took 0.4 to 1.3 s each to plan (YOLOv8n's 63 spent 130 s), and with 53
// of the bundled model's 59 convolutions on them, each faster alone than the legacy engine, the
// model ran 2.20 ms against 1.10 ms on the legacy engine; fp16 graphs planned in 0.04 to 0.4 s
// and the same model went 0.65 -> 0.54 ms.
std::string cudnn_graph_dtype_refusal(bool half);

// What a node's plan-time trial of one cuDNN engine found: its implementation ("cudnn-graph:
// eng12/fp16", "cudnn:implicit_precomp_gemm/nhwc_filter/fp16"), why it cannot run the node (empty
// when it planned and passed its probe), and its measured time at the node's real shape (ms,
// 0 or below when not measured).
struct CudnnEngineTrial {
  std::string implementation;
  std::string problem;
  double ms = 0;
};

// Which engine a node keeps and the note its implementation() carries in parentheses.
struct CudnnEngineChoice {
  enum class Winner { kGraph, kLegacy, kNeither };
  Winner winner = Winner::kNeither;
  std::string note;
};

// The rule: an engine with a problem loses (the note gives its problem); both without one: the
// faster as measured (strictly: a tie keeps the legacy engine, the one proven on the H100), the
// note giving both times, and one left unmeasured loses ("not timed"). Neither usable: kNeither,
// the note naming both problems (the node takes the direct kernel).
CudnnEngineChoice choose_cudnn_engine(const CudnnEngineTrial& graph, const CudnnEngineTrial& legacy);

}  // namespace sd::native::cuda
