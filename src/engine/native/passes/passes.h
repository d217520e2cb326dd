// Graph passes run at load time (LoadOptions::optimize). Each keeps the graph valid and
// topologically sorted, and returns how many rewrites it made.
#pragma once

#include <functional>
#include <vector>

#include "core/error.h"
#include "engine/native/graph.h"
#include "engine/native/op_registry.h"

namespace sd::native::passes {

// Constant nodes become constant values; nodes whose inputs are all constant are computed now
// (with the registry's own kernels) and become constants too.
Result<int> fold_constants(Graph& g, const OpRegistry& registry);
// BatchNormalization right after a Conv (whose output nothing else reads) folded into W and B.
Result<int> fold_batchnorm_into_conv(Graph& g);
// Conv + activation (Relu, LeakyRelu, Sigmoid, HardSwish, Clip, SiLU as x*Sigmoid(x)) and a
// following residual Add become one FusedConv (domain "streamdet") with post ops.
int fuse_conv_activations(Graph& g);
// The inverse of the residual part of that fusion, for the planner: the fusion is made before
// shapes are known, and a sum operand that turns out not to have the output's shape (one that
// broadcasts) cannot be a post op. Returns the nodes that compute `fused` without it: the
// convolution with the post ops before the sum, an Add, and the post ops after it as their ONNX
// nodes. `new_value()` gives the id of a fresh intermediate value, `new_constant(v)` one holding
// the float scalar v (Clip's bounds).
std::vector<Node> split_fused_sum(const Node& fused, int opset, const std::function<int()>& new_value,
                                  const std::function<int(float)>& new_constant);
// YOLOv8-style box decoding (DFL): x [N, 4, K, A] -> Transposes -> Softmax over the K bins ->
// Transposes -> a 1x1 Conv with one output channel (the bins' values) becomes one BinExpectation
// node (domain "streamdet"): y[n, 0, s, a] = b + sum_k w_k softmax_k(x[n, s, :, a]), computed
// with the anchors as the vector and no transposes. The bin axis may be 1 or 2 of x; the anchors
// must be its last axis.
int fuse_bin_expectation(Graph& g);
// QDQ convolutions (DequantizeLinear of an int8/uint8 input and of constant symmetric int8
// weights -> Conv -> QuantizeLinear, ONNX Runtime's quantize_static format) become one Int8Conv
// (domain "streamdet") reading the quantized input and writing the quantized output
// (passes/qdq_fusion.cpp). Runs before constant folding, which would dequantize the weights.
// `int8_exact` false (no VNNI, cpu/int8_support.h): only a uint8 source with weights within
// [-63, 63] is computed by oneDNN's int8 kernels, what they compute exactly there; any other
// Int8Conv is marked ops::kInt8InFloat (conv_attrs.h: computed in float32 between its int8
// tensors), and `left_inexact`, where given, gets how many (the load's note says so).
int fuse_qdq_convolutions(Graph& g, bool int8_exact, int* left_inexact = nullptr);
// After fuse_qdq_convolutions: per-tensor quantized tensors kept int8 through Concat, Split,
// Slice, Resize (nearest) and residual Adds, with DequantizeLinear and the SiLU read as float as
// 256-entry tables (Int8Table, Int8AddTables, cpu/int8_table_ops.cpp; passes/int8_dataflow.cpp).
// The same values as the graph as written.
int keep_int8_through_data_ops(Graph& g);
// Nodes whose outputs nothing reads (and are not graph outputs) are removed, repeatedly.
int remove_dead_nodes(Graph& g);

// Uses of every value: how many node inputs read it, plus one if it is a graph output.
std::vector<int> use_counts(const Graph& g);

}  // namespace sd::native::passes
