// Our 1x1 convolution on the AVX-512 path: stride 1, no padding, group 1, float32, channels-last
// in and out, output channels a multiple of 16, with the FusedConv epilogue (bias, activations,
// residual sum) applied in registers before the one store of each result.
//
// Why hand-written: a 1x1 convolution is a GEMM, [pixels, c] x [c, oc], and oneDNN's brgconv_1x1
// runs that part well, but YOLO's 1x1 layers end in SiLU, which oneDNN 2.6 computes slower than
// the convolution itself on narrow layers (dnnl_conv.cpp: our own pass over the output instead).
// That pass reads and writes the whole output a second time; here the activation runs on the
// accumulators, so the output is written once. And a destination, source or sum may lie inside
// wider channels (a pixel stride, as our Winograd takes them), which oneDNN 2.6's jit kernels
// refuse: a C2f block's `cv1` writes straight into its Concat's rows (exec/plan_concat.cpp).
//
// The GEMM: the same 6x64 FMA micro-kernel as our AVX-512 Winograd (24 accumulators, 4 weight
// vectors; winograd_conv.h), the accumulators starting at the bias; the weights packed once in
// panels of 64 output channels (wino::panel_width: 80 as 48 + 32) so each panel is one stream.
// Pixels go in blocks of kBlockPixels, each thread (parallel.h) an even share of the blocks; a
// block's rows are multiplied by each panel in turn, so its source rows stay in L1/L2 while the
// panels stream from L2. Timed against oneDNN's primitive per node at load (dnnl_conv.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/winograd_conv.h"

namespace sd::native::ops {

struct PointwiseGeometry {
  int64_t pixels, c, oc;  // n * h * w pixels of c channels in, oc out
};

class PointwiseConv {
 public:
  // Whether the kernel takes this convolution on a processor running `isa` (AVX-512 and up).
  static bool applies(int64_t c, int64_t oc, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w, int64_t group, int64_t pt,
                      int64_t pl, int64_t pb, int64_t pr, cpu::Isa isa = cpu::active_isa());

  // weights: [oc, c] (OIHW with 1x1); bias: [oc] or null.
  PointwiseConv(const PointwiseGeometry& g, const float* weights, const float* bias, std::vector<WinoPost> posts);

  // src: [pixels, c]; dst: [pixels, oc]; sum: [pixels, oc] where the epilogue has a kSum.
  // strides: floats from one pixel to the next of each (0: dense). Needs AVX-512.
  void run(const float* src, float* dst, const float* sum, int threads, WinoStrides strides = {}) const;

  static const char* name() { return "streamdet:pointwise:avx512"; }

  // Pixels a block: a multiple of the micro-kernel's 6 rows.
  static constexpr int64_t kBlockPixels = 48;

 private:
  PointwiseGeometry g_;
  std::vector<float> packed_;  // [panels][c][panel width]
  std::vector<float> bias_;    // [oc]
  std::vector<WinoPost> posts_;
};

namespace pointwise {

struct RunArgs {
  PointwiseGeometry g;
  const float* packed;
  const float* bias;
  const WinoPost* posts;
  int64_t post_count;
  const float* src;
  float* dst;
  const float* sum;
  int threads;
  int64_t src_stride, dst_stride, sum_stride;  // floats a pixel
};

#if defined(__x86_64__)
void run_avx512(const RunArgs& a);
#endif

}  // namespace pointwise

}  // namespace sd::native::ops
