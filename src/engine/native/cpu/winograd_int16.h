// An int8 convolution as Winograd F(4x4, 3x3) in 16-bit integer arithmetic, for processors whose
// int8 kernels are not exact or not fast: AVX2 without VNNI (Zen 2 and 3, most laptops). There
// oneDNN's int8 kernels add pairs of u8 x s8 products in int16 and saturate (int8_support.h), and
// its exact ones still do 3x3 layers the direct way, while our float32 Winograd does a fifth of
// the multiplications: an Int8Conv used to be computed in float32 (int8_conv_in_float.h). Here the
// 3x3 stride-1 layers stay integer: vpmaddwd multiplies 16 pairs of int16 and adds them in pairs
// into int32, twice the multiply-adds of a float32 FMA an instruction, exactly.
//
// The arithmetic (ncnn's int8 Winograd F(4x4, 3x3) takes the same route):
// - the source bytes minus their zero point, |d| <= 255, through B^T d B in int16: B^T's rows sum
//   to at most 10 in magnitude, so |V| <= 100 * 255 = 25500 < 2^15;
// - the weights through G' g G'^T with G' = diag(24, 24, 24, 24, 24, 1) G, all integers (G holds
//   1/4, 1/6, 1/12, 1/24), |U| <= 12 * 12 * 128 = 18432 < 2^15;
// - per position, sum over channels of U V in int32 (vpmaddwd + vpaddd): exact while the sum
//   cannot pass 2^31. Where the weights allow a worst-case source to pass it, the channels are
//   summed in chunks (chunk_channels(), from the weights' own sums at load: all of them for most
//   layers) and the chunks' sums added in float32;
// - M = that sum times x_scale * w_scale[oc] / (the two positions' G' row scales), float32; the
//   output transform A^T M A, the bias, written float32 NHWC or each tile quantized as it is
//   computed (int16_conv.h's Int16Output, with a fused SiLU's table).
// So the result differs from the exact integer convolution only by the float32 roundings after
// the integer sums (the output transform's, as in every float Winograd), far below a quantization
// step; a value may land one step apart, as when the graph runs as written.
//
// Shapes: 3x3, stride 1, pad 1, dilation 1, one group, channels and output channels multiples of
// 16; int8 or uint8 source, int8 weights (zero point 0, per tensor or per output channel).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/native/conv_attrs.h"
#include "engine/native/cpu/int16_conv.h"

namespace sd::native::ops {

class Int16Winograd final : public Int16Conv {
 public:
  // Whether the kernel takes this convolution (the processor is the caller's business: run()
  // needs AVX2).
  static bool applies(const ConvGeometry& g);

  // weights: int8 OIHW [oc, c, 3, 3]; w_scales: 1 or oc of them; bias: float32 [oc] (in the
  // output's units) or null. The source: scale, zero point, int8 (signed) or uint8 bytes.
  Int16Winograd(const ConvGeometry& g, const int8_t* weights, const std::vector<float>& w_scales, const float* bias, float x_scale,
                int32_t x_zero_point, bool x_signed);

  // Channels summed in int32 before a float32 addition (all of them where the weights allow).
  int64_t chunk_channels() const override { return chunk_; }
  const char* name() const override { return avx_vnni_ ? "streamdet:wino16_4x3:avx2_vnni" : "streamdet:wino16_4x3:avx2"; }

 protected:
  void compute(const uint8_t* src, const Int16Output& out, int threads) const override;

 private:
  ConvGeometry g_;
  int32_t x_zero_ = 0;
  bool x_signed_ = false;
  int64_t chunk_ = 0;
  bool avx_vnni_ = false;        // AVX-VNNI's vpdpwssd in the micro-kernel (where the processor has it and the level allows)
  std::vector<int16_t> packed_;  // U' by position: [36][oc / 16][c / 2][16][2] (channel pairs side by side, as vpmaddwd takes them)
  std::vector<float> scale_;     // [36][oc]: x_scale * w_scale[oc] / (G' row scales)
  std::vector<float> bias_;      // [oc]
};

namespace wino16 {

struct Args {
  int64_t n, h, w, c, oc;
  const int16_t* packed;
  const float* scale;
  const float* bias;
  int64_t chunk;
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

}  // namespace wino16

}  // namespace sd::native::ops
