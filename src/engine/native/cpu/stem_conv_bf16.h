// The stem convolution with bf16 products (--precision bf16 on processors with AVX512_BF16): an
// image's 3x3 stride-2 layer (YOLOv8's and v11's first), NCHW float32 in, channels-last out
// (float32, or bf16 where the result is kept bf16), bias and post ops in float32 on the
// accumulators, before the one store.
//
// Why: under --precision bf16 the float32 stem (stem_conv.h) was 8% of YOLOv8n's run (1.2 of 14.9
// ms), the largest layer left in float32. Its inner loop is one FMA per multiply, each with its
// own broadcast load of an input value. Here each vdpbf16ps takes two multiplies: the pair of
// adjacent inputs x(2ox - 1), x(2ox) (kernel columns 0 and 1 of output column ox) is one 32-bit
// word of the input row converted to bf16 with one zero in front (the left padding), and column
// 2, x(2ox + 1), is the low half of the next word, whose high half (x(2ox + 2)) meets a zero
// weight. That next word is the first pair of output column ox + 1: one broadcast a column and
// row of the kernel instead of three. The input rows an output row reads are converted to bf16
// once for it (vcvtne2ps2bf16, the rounding oneDNN's bf16 convolutions apply to their source).
//
// The arithmetic: bf16 products of bf16-rounded inputs and weights, summed in float32 (as our other
// bf16 kernels and oneDNN's). Input column 2 ox + 2 meets a zero weight in output column ox's
// second pair: an infinite or NaN input there also makes that column NaN (images are finite).
// Taken without timing it against the float32 stem: a third of the instructions and broadcasts.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/stem_conv_kernel.h"
#include "engine/native/cpu/winograd_conv.h"

namespace sd::native::ops {

namespace stem_bf16 {

// One call's inputs. packed: per block of 16 output channels, per input channel and kernel row,
// two vectors of 16 bf16 pairs (columns 0 and 1; column 2 and zero); rows: room for the converted
// input rows (StemConvBf16::row_scratch elements), row_len elements apart.
struct RowArgs {
  StemConvGeometry g;
  const uint16_t* packed;
  const float* bias;  // [oc rounded up to 16]
  const WinoPost* posts;
  int64_t post_count;
  const float* src;    // [n, c, h, w]
  float* dst;          // [n, oh, ow, oc], or null where dst_bf16 is given
  uint16_t* dst_bf16;  // the same in bf16 (rounded as vcvtneps2bf16)
  int64_t row_len;     // elements a converted input row takes
};

#if defined(__x86_64__)
// Computes output row r (of n * oh); needs AVX512_BF16.
void row_avx512bf16(const RowArgs& a, int64_t r, uint16_t* rows);
#endif

}  // namespace stem_bf16

class StemConvBf16 {
 public:
  // Whether this kernel takes the layer on a processor running `isa`: 3x3, stride 2, one column of
  // padding on the left, an NCHW source of 1 to 4 channels, 8 or more output channels (in blocks
  // of 16, the last one stored in part), post ops without a residual sum; AVX512_BF16.
  static bool applies(const StemConvGeometry& g, bool src_nhwc, const std::vector<WinoPost>& posts, cpu::Isa isa = cpu::active_isa());

  // weights: OIHW [oc, c, 3, 3] float32 (rounded to bf16 here); bias: [oc] or null.
  StemConvBf16(const StemConvGeometry& g, const float* weights, const float* bias, std::vector<WinoPost> posts);

  // src: [n, c, h, w] float32; the result into dst (float32) or, where dst_bf16 is given, into it.
  void run(const float* src, float* dst, uint16_t* dst_bf16, int threads) const;

  const char* name() const { return "streamdet:stem_bf16:avx512_bf16"; }

 private:
  StemConvGeometry g_;
  std::vector<uint16_t> packed_;
  std::vector<float> bias_;
  std::vector<WinoPost> posts_;
  int64_t row_len_ = 0;
};

}  // namespace sd::native::ops
