// Static quantization of an ONNX model, the graph side: which nodes are quantized, which tensors
// need an activation range, and the QDQ model written from those ranges, laid out as ONNX
// Runtime's quantize_static writes one (QuantizeLinear -> DequantizeLinear on each quantized
// node's activation input and output, DequantizeLinear of int8 weights and of an int32 bias).
// Activations: per tensor, asymmetric uint8 (QUInt8). Weights: symmetric int8 (QInt8), per output
// channel (axis 0) for Conv where the opset allows it (13+), per tensor for MatMul.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/error.h"

namespace sd::quant {

struct Range {
  float lo = 0, hi = 0;
};

// What the head rule does with the head's last convolutions: the Conv nodes whose output reaches
// a model output with no other Conv or MatMul on the way (YOLO's box / class predictions).
enum class HeadRule {
  // Input activation and weights quantized, the output left float (no QuantizeLinear after it:
  // the rounding of the output, what the rule is for, is avoided; what is quantized is an
  // activation that is a function of a quantized tensor already). Only for a Conv whose input
  // comes from a quantized Conv through activation ops alone (SiLU, Relu, ...): YOLOv8's DFL
  // convolution, which reads a Softmax, stays float. The engine runs such a Conv as an int8
  // convolution writing floats (engine/native/passes/qdq_fusion.cpp).
  kInt8Input,
  kFloat,  // the whole Conv float (also MatMul heads, always)
};

struct QuantPlan {
  std::vector<int> quantized;            // indices of the Conv / MatMul nodes to quantize
  std::vector<int> float_output;         // those of `quantized` whose output stays float (HeadRule::kInt8Input)
  std::vector<std::string> kept_by_rule;  // quantizable nodes kept float by the head rule
  std::vector<std::string> kept_by_option;
  std::vector<std::string> activations;  // tensors that need a range, in graph order
  bool per_channel = true;               // Conv weights per output channel (needs opset 13)
  bool upgrade_opset = false;            // the model is brought to opset 13 for that
  // Weights in 7 bits ([-63, 63], ONNX Runtime's reduce_range) instead of 8: on x86 processors
  // without VNNI the int8 convolutions (vpmaddubsw, int16 pair sums) are exact only for those,
  // so only such a model runs in int8 there (engine/native/cpu/int8_support.h); with 8-bit
  // weights it runs its QDQ nodes in float, slower than the fp32 model.
  bool reduce_range = false;
};

// A node's name as the user names it (--keep-float): its name, or its first output when unnamed.
std::string node_label(const onnx::NodeProto& node);

// Errors: kModel for a model that is quantized already (QuantizeLinear, QLinearConv, ...) or
// whose opset has no QuantizeLinear (< 10); kUsage for a --keep-float name that is no node.
// `what`: the model's path, for the messages.
Result<QuantPlan> plan_quantization(const onnx::ModelProto& model, const std::vector<std::string>& keep_float,
                                    const std::string& what, HeadRule head = HeadRule::kInt8Input);

// Parses --head's value ("int8-input" or "float").
std::optional<HeadRule> parse_head_rule(const std::string& s);

// The QDQ model. `ranges` must hold every tensor of plan.activations.
Result<onnx::ModelProto> write_qdq(const onnx::ModelProto& model, const QuantPlan& plan,
                                   const std::map<std::string, Range>& ranges, const std::string& what);

// uint8 scale and zero point of a range, widened to hold 0 (as ONNX Runtime computes them).
void activation_params(Range r, float& scale, uint8_t& zero_point);

}  // namespace sd::quant
