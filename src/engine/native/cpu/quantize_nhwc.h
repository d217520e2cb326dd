// QuantizeLinear (per tensor) of a plain N,C,H,W float tensor written channels-last (N,H,W,C):
// a QDQ model's image quantized for its first int8 convolution in one pass, instead of a
// quantize and then a transpose of the bytes (the planner's choice: exec/plan_layout.cpp). The
// values are QuantizeLinear's (cpu/quant_ops.cpp): x / scale rounded half to even, plus the zero
// point, NaN to 0, saturated.
#pragma once

#include <cstdint>

namespace sd::native::ops {

// y[n][h][w][c] = quantize(x[n][c][h][w]); uint8 (is_signed false) or int8.
void quantize_to_nhwc(const float* x, int64_t n, int64_t c, int64_t h, int64_t w, float scale, int32_t zero_point, bool is_signed,
                      void* y, int threads);

// One row of a three-channel image (channels `plane` floats apart, `len` pixels) into its
// interleaved bytes; the variant quantize_to_nhwc takes, and each for the tests.
using Quantize3RowFn = void (*)(const float* x, int64_t plane, int64_t len, float scale, int32_t zero_point, bool is_signed, uint8_t* y);
void quantize3_row_baseline(const float* x, int64_t plane, int64_t len, float scale, int32_t zero_point, bool is_signed, uint8_t* y);
#if defined(__x86_64__)
void quantize3_row_avx2(const float* x, int64_t plane, int64_t len, float scale, int32_t zero_point, bool is_signed, uint8_t* y);
void quantize3_row_avx512_vbmi(const float* x, int64_t plane, int64_t len, float scale, int32_t zero_point, bool is_signed, uint8_t* y);
#endif
Quantize3RowFn quantize3_row_kernel();

}  // namespace sd::native::ops
