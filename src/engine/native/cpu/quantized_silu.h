// The quantized SiLU an Int8Conv applies to its own quantized result (passes/qdq_fusion.cpp's
// "silu_*" attributes): DequantizeLinear -> x * Sigmoid(x) -> QuantizeLinear as one 256-entry
// byte table, computed in float as those ops compute it.
#pragma once

#include <array>
#include <cstdint>

#include "engine/native/graph.h"

namespace sd::native::ops {

// table[b]: the quantized SiLU of byte b (int8 when in_signed, else uint8), written as an int8
// byte when out_signed, else a uint8 one.
std::array<uint8_t, 256> quantized_silu_table(const Attributes& a, bool in_signed, bool out_signed);

}  // namespace sd::native::ops
