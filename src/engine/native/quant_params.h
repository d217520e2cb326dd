// The scales and zero points of ONNX's quantization ops, checked where they are first known: at
// load (the model's constants: bad values are one model error naming the node, exit 3) and at
// plan time (the shapes of every input). Shared by the CPU kernels (cpu/quant_ops.cpp) and the
// planner's QDQ folding.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "engine/native/graph.h"
#include "engine/native/op_registry.h"

namespace sd::native {

// A QuantizeLinear / DequantizeLinear node's layout of its parameters.
struct QdqParams {
  int axis = 1;              // normalized; meaningful when per_channel
  bool per_channel = false;  // scale is 1-D with one value per slice along axis
};

// Plan time: input types and shapes (x int8/uint8/int32 or float32, scale float32 of one value or
// one per channel of x's axis, zero point of the scale's length and an int8/uint8 type, int32 for
// DequantizeLinear of int32), and the scale's values where they are constants.
Result<QdqParams> qdq_params(const OpContext& ctx);

// Scales must be positive and finite: a message naming the first bad one, or empty.
std::string bad_scale(const HostTensor& scale);

// Load time, before the graph is built: a quantization op whose zero point is an initializer of a
// type the ops do not take (int16, float, ...) is a model error naming the node (the importer
// would otherwise refuse the initializer's type without saying which op it feeds).
Status check_zero_point_types(const onnx::GraphProto& g, const std::string& what);
// Load time, on the graph: every quantization op's constant scales and zero points (types, values,
// per-channel lengths against a known axis dimension).
Status check_quantization(const Graph& g, const std::string& what);

}  // namespace sd::native
