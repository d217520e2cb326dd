// An Int8Conv computed in float32 (ops::kInt8InFloat, conv_attrs.h), for the processors whose
// int8 kernels would not compute it exactly: without AVX-512 VNNI oneDNN's int8 convolutions add
// pairs of u8 x s8 products in int16 and saturate (int8_support.h), so only a uint8 source with
// 7-bit weights is theirs. Any other QDQ convolution is computed as the graph writes it: its
// source dequantized, a float32 convolution with the dequantized weights (the fastest float kernel
// for the shape: our Winograd, the stem kernel or oneDNN's, cpu/dnnl_conv.cpp), its result
// quantized, and a fused SiLU's byte table. The tensors around it stay int8, so the model keeps
// its int8 dataflow (Concat, Split, residual Adds of bytes) and its activations cost no float
// passes of their own: a QDQ YOLOv8n on an AVX2-only processor ran 1.4x slower than its float
// original with every QuantizeLinear, DequantizeLinear, Sigmoid and Mul as a node.
// Its values: those of the graph as written, but for the float sums' rounding (a value may land
// one quantization step apart, as when the graph itself runs).
// The layers our int16 kernels take (int16_conv.h: one group, channels multiples of 16,
// channels-last, AVX2) run there instead where that is faster on the node's shape (timed at
// load): the source bytes multiplied in exact 16-bit integer arithmetic (the 3x3 stride-1 ones by
// Winograd), no dequantized copy of the source; the result quantized as it is computed.
#pragma once

#include <memory>

#include "core/error.h"
#include "engine/native/op_registry.h"

namespace sd::native::ops {

Result<std::unique_ptr<Kernel>> make_int8_conv_in_float(const OpContext& ctx);

}  // namespace sd::native::ops
