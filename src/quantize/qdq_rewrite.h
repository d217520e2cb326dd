// Static quantization of an ONNX model, the graph side: which nodes are quantized, which tensors
// need an activation range, and the QDQ model written from those ranges, laid out as ONNX
// Runtime's quantize_static writes one (QuantizeLinear -> DequantizeLinear on each quantized
// node's activation input and output, DequantizeLinear of int8 weights and of an int32 bias).
// Activations: per tensor, asymmetric uint8 (QUInt8). Weights: symmetric int8 (QInt8), per output
// channel (axis 0) for Conv where the opset allows it (13+), per tensor for MatMul.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/error.h"

namespace sd::quant {

struct Range {
  float lo = 0, hi = 0;
};

struct QuantPlan {
  std::vector<int> quantized;            // indices of the Conv / MatMul nodes to quantize
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
                                    const std::string& what);

// The QDQ model. `ranges` must hold every tensor of plan.activations.
Result<onnx::ModelProto> write_qdq(const onnx::ModelProto& model, const QuantPlan& plan,
                                   const std::map<std::string, Range>& ranges, const std::string& what);

// uint8 scale and zero point of a range, widened to hold 0 (as ONNX Runtime computes them).
void activation_params(Range r, float& scale, uint8_t& zero_point);

}  // namespace sd::quant
