// Direct convolution for the first layer of a detector: 1 to 4 input channels (RGB images), any
// kernel, stride and padding, 8 or more output channels (in blocks of 16), written channels-last.
//
// Why hand-written: oneDNN's kernels vectorize over input channels, of which an image has three;
// its best choice here (brgconv on NHWC, after converting the input) ran YOLOv8n's 3->16 3x3/2
// stem at 640 in 1.94 ms, 47 GFLOP/s, the most expensive layer of the model for 4% of its FLOPs.
// This kernel vectorizes over 16 output channels instead (one AVX-512 register or two AVX2 ones:
// a broadcast input value times a weight vector; variants per ISA, stem_conv_kernel.h), reads the NCHW input directly (no conversion) and keeps
// twelve output pixels in registers per weight load.
//
// The same kernel runs the narrowest inner layers, 8 -> 8 channels 3x3 on channels-last data
// (an 8-channel-wide model's bottlenecks): oneDNN pads those to 16 channels on both sides.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/stem_conv_kernel.h"
#include "engine/native/graph.h"

namespace sd::native::ops {

// Whether a Conv/FusedConv with `c` input and `oc` output channels, a kh x kw kernel and these
// attributes runs here (group 1, no dilation): images (1 to 4 channels, either layout) and
// narrow channels-last layers (8 -> 8 channels, 3x3 stride 1). The planner asks with
// src_nhwc = false: such a convolution takes its source in plain NCHW, so it is not converted to
// channels-last first.
bool stem_conv_applies(int64_t c, int64_t oc, int64_t kh, int64_t kw, bool src_nhwc, const Attributes& attrs);

class StemConv {
 public:
  // weights: OIHW [oc, c, kh, kw]; bias: [oc] or null. alpha, beta: LeakyRelu's slope, Clip's bounds.
  StemConv(const StemConvGeometry& g, const float* weights, const float* bias, StemActivation act = StemActivation::kNone,
           float alpha = 0, float beta = 0);

  // src: [n, c, h, w] (or [n, h, w, c] when src_nhwc); dst: [n, oh, ow, oc]. finish_rows(y, count)
  // is called on each finished run of output floats (whole rows), on the thread that wrote them,
  // so that activations are applied while the row is still in cache.
  // Runs the variant for sd::cpu::active_isa().
  void run(const float* src, bool src_nhwc, float* dst, int threads, const std::function<void(float*, int64_t)>& finish_rows) const;

  // Runs the variant for `isa`, which the processor must be able to run (cpu::runnable_isas()):
  // for the tests and benchmarks that compare the variants.
  void run_isa(cpu::Isa isa, const float* src, bool src_nhwc, float* dst, int threads,
               const std::function<void(float*, int64_t)>& finish_rows) const;

 private:
  StemConvGeometry g_;
  int64_t lanes_ = 16;         // output channels per vector: 8 for layers of at most 8, else 16
  std::vector<float> packed_;  // [oc/lanes][c][kh][kw][lanes], 64-byte aligned
  std::vector<float> bias_;    // [oc]
  StemActivation act_;
  float alpha_, beta_;
  int64_t ox_lo_ = 0, ox_hi_ = 0;  // output columns whose window lies inside the input

  // An image comes from memory, not from cache (the run's other tensors evicted it): the rows
  // output row r reads are asked for kPrefetchRows rows ahead (some 2 us of work), about 9 rows
  // of an image's channels that the hardware prefetchers, following each from its start, bring
  // in too late. Measured: YOLOv8n's 640 stem, 2 threads in the engine, 0.82 -> 0.67-0.75 ms
  // (AVX-512), 1.02-1.06 -> 0.80-1.06 (AVX2); one thread, its source evicted first, 0.92x and 0.83x.
  static constexpr int64_t kPrefetchRows = 2;
  void prefetch_source_rows(const float* src, int64_t r) const;
};

}  // namespace sd::native::ops
