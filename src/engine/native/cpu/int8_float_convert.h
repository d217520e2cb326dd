// The conversions around an Int8Conv computed in float32 (int8_conv_in_float.h), one variant per
// instruction set (the baseline's a loop GCC vectorizes, AVX2 and AVX-512 by hand), each with the
// values of the ONNX ops it stands for:
// - dequantize: y = (x - z) * s for bytes x (int8 or uint8): DequantizeLinear's;
// - quantize: x / s rounded half to even, plus z, NaN to 0, saturated to int8 or uint8:
//   QuantizeLinear's; then, with a table, table[byte] (a fused quantized SiLU), written as bytes;
//   on AVX2 the table is applied 32 bytes at a time by shuffles (byte_table_rows_avx2.h), on
//   AVX-512 by byte_table::lookup_avx512 over the bytes once quantized.
#pragma once

#include <cstdint>

#include "core/cpu_isa.h"

namespace sd::native::ops::int8_float {

struct Quantization {
  float scale = 1.f;
  int32_t zero_point = 0;
  bool is_signed = false;  // int8 bytes, else uint8
};

using DequantizeFn = void (*)(const uint8_t* x, int64_t n, const Quantization& q, float* y);
// table: null, or 256 bytes indexed by the quantized byte, each the byte to write.
using QuantizeFn = void (*)(const float* x, int64_t n, const Quantization& q, const uint8_t* table, uint8_t* y);

void dequantize_baseline(const uint8_t* x, int64_t n, const Quantization& q, float* y);
void quantize_baseline(const float* x, int64_t n, const Quantization& q, const uint8_t* table, uint8_t* y);
#if defined(__x86_64__)
void dequantize_avx2(const uint8_t* x, int64_t n, const Quantization& q, float* y);
void quantize_avx2(const float* x, int64_t n, const Quantization& q, const uint8_t* table, uint8_t* y);
void dequantize_avx512(const uint8_t* x, int64_t n, const Quantization& q, float* y);
void quantize_avx512(const float* x, int64_t n, const Quantization& q, const uint8_t* table, uint8_t* y);
#endif

// The variants for `isa` (the highest at or below it).
DequantizeFn dequantize_kernel(cpu::Isa isa);
QuantizeFn quantize_kernel(cpu::Isa isa);

}  // namespace sd::native::ops::int8_float
