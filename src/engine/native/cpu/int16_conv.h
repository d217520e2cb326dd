// The int8 convolutions computed in 16-bit integers, for processors whose int8 kernels are not
// exact or not fast (AVX2 without VNNI): an Int8Conv there runs one of these where it takes the
// node and is faster than float32 on the node's shape (int8_conv_in_float.cpp times them at load).
// - Int16Winograd (winograd_int16.h): 3x3 stride-1 layers, Winograd F(4x4, 3x3);
// - Int16Pointwise (pointwise_int16.h): the other layers of one group, a GEMM over rows of taps
//   (a 1x1 layer's rows as they are).
// Both: the source bytes minus their zero point as int16, the int8 weights as int16, `vpmaddwd`
// summing the products of channel pairs in int32 exactly (twice a float FMA's multiply-adds an
// instruction), the sums scaled to float32, the bias added, the result written float32 or
// quantized as it is computed (int8_float_convert.h's quantization, with a fused SiLU's table).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/native/conv_attrs.h"
#include "engine/native/cpu/int8_float_convert.h"

namespace sd::native::ops {

// Where an int16 kernel writes its result: float32 (dst), or quantized as it is computed (dst_q,
// with y's quantization and table, null or 256 entries, through `quantize`), without a float32
// copy of the whole output. Both [n, oh, ow, oc].
struct Int16Output {
  float* dst = nullptr;
  uint8_t* dst_q = nullptr;
  const int8_float::Quantization* y_q = nullptr;
  const uint8_t* table = nullptr;
  int8_float::QuantizeFn quantize = nullptr;
};

class Int16Conv {
 public:
  virtual ~Int16Conv() = default;
  // src: [n, h, w, c] bytes; dst: [n, oh, ow, oc] float32. Needs AVX2 (cpu::detected_isa() >= kAvx2).
  void run(const uint8_t* src, float* dst, int threads) const {
    Int16Output out;
    out.dst = dst;
    compute(src, out, threads);
  }
  // The same, quantized as it is computed into dst [n, oh, ow, oc] bytes.
  void run_quantized(const uint8_t* src, uint8_t* dst, const int8_float::Quantization& y, const uint8_t* table,
                     int8_float::QuantizeFn quantize, int threads) const {
    Int16Output out;
    out.dst_q = dst, out.y_q = &y, out.table = table, out.quantize = quantize;
    compute(src, out, threads);
  }
  // The implementation's name for the profile ("streamdet:wino16_4x3:avx2", ...).
  virtual const char* name() const = 0;
  // Channels summed in int32 before a float32 addition (all of them where the weights allow).
  virtual int64_t chunk_channels() const = 0;

 protected:
  // The kernel (AVX2; aborts in a build without x86 kernels, where callers never get here).
  virtual void compute(const uint8_t* src, const Int16Output& out, int threads) const = 0;
};

// The int16 kernel that takes the convolution (NHWC, dense), or null. weights: int8 OIHW;
// w_scales: 1 or oc; bias: float32 [oc] in the output's units, or null; the source's scale, zero
// point (within its type's range) and type.
std::unique_ptr<Int16Conv> make_int16_conv(const ConvGeometry& g, const int8_t* weights, const std::vector<float>& w_scales, const float* bias,
                                           float x_scale, int32_t x_zero_point, bool x_signed);

}  // namespace sd::native::ops
