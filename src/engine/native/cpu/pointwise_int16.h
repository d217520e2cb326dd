// An int8 convolution as a GEMM in 16-bit integers (int16_conv.h), for processors without exact
// or fast int8 kernels (AVX2 without VNNI): there an 8-bit-weight or int8-source layer was
// computed in float32 (int8_conv_in_float.h), at float FMA's rate; `vpmaddwd` does twice the
// multiply-adds an instruction, exactly. 1x1 layers read the source's rows as they are; any other
// window (YOLOv8n's stride-2 3x3 layers) gathers each block of output pixels' taps first (kh x kw
// x c int16 a pixel, in L1/L2: im2col by blocks). The sums cannot overflow: |x - zero point| <=
// 255 and |w| <= 128 make each product at most 32640, so int32 holds the sum of 65536 of them.
//
// Shapes: one group, channels and output channels multiples of 16, kh x kw x c at most 65536;
// any kernel size, stride, padding and dilation; int8 or uint8 source, int8 weights (zero point
// 0, per tensor or per output channel), NHWC.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/native/conv_attrs.h"
#include "engine/native/cpu/int16_conv.h"

namespace sd::native::ops {

class Int16Pointwise final : public Int16Conv {
 public:
  static bool applies(const ConvGeometry& g);

  // As make_int16_conv takes them (int16_conv.h).
  Int16Pointwise(const ConvGeometry& g, const int8_t* weights, const std::vector<float>& w_scales, const float* bias, float x_scale,
                 int32_t x_zero_point, bool x_signed);

  const char* name() const override {
    return pointwise() ? (avx_vnni_ ? "streamdet:pointwise16:avx2_vnni" : "streamdet:pointwise16:avx2")
                       : (avx_vnni_ ? "streamdet:gemm16:avx2_vnni" : "streamdet:gemm16:avx2");
  }
  int64_t chunk_channels() const override { return g_.c; }

 protected:
  void compute(const uint8_t* src, const Int16Output& out, int threads) const override;

 private:
  bool pointwise() const { return g_.kh == 1 && g_.kw == 1 && g_.sh == 1 && g_.sw == 1 && g_.pt == 0 && g_.pl == 0; }
  ConvGeometry g_;
  int32_t x_zero_ = 0;
  bool x_signed_ = false;
  bool avx_vnni_ = false;        // AVX-VNNI's vpdpwssd in the micro-kernel (where the processor has it and the level allows)
  std::vector<int16_t> packed_;  // [oc / 16][k / 2][16][2], k = (ky * kw + kx) * c + channel
  std::vector<float> scale_;     // [oc]: x_scale * w_scale[oc]
  std::vector<float> bias_;      // [oc]
};

namespace pw16 {

struct Args {
  ConvGeometry g;
  const int16_t* packed;
  const float* scale;
  const float* bias;
  int32_t x_zero;
  bool x_signed;
  const uint8_t* src;
  Int16Output out;
  int threads;
  bool avx_vnni;  // the micro-kernel's vpdpwssd form (cpu::avx_vnni_active())
};

#if defined(__x86_64__)
void run_avx2(const Args& a);
#endif

}  // namespace pw16

}  // namespace sd::native::ops
