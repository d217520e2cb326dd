// Winograd F(4x4, 3x3) convolution for the AVX2 path: 3x3, stride 1, pad 1, group 1, float32,
// channels-last in and out, channels and output channels multiples of 8 (at least 16), with the
// FusedConv epilogue (bias, activations, residual sum) applied in the output transform.
//
// Why hand-written: oneDNN 2.6 has Winograd only for AVX-512 (jit_wino_4x3); on AVX2 its direct
// kernel runs YOLOv8n's 3x3 layers at about half the FMA peak, and those layers are most of the
// model. F(4x4, 3x3) computes a 4x4 output tile from a 6x6 input tile with 36 multiplications per
// channel pair instead of 144: the input tile is transformed (B^T d B), multiplied position by
// position with the transformed weights (G g G^T, done once at load), summed over channels (36
// small GEMMs, the bulk of the time: a 6x16 FMA micro-kernel) and transformed back (A^T m A).
//
// Work is split in blocks of six tiles whose transformed input and products stay in L1/L2 (the
// weights stream from L2: winograd_conv.cpp says what was measured); the engine's threads
// (parallel.h) take blocks. The kernel is compiled for AVX2 + FMA only
// (winograd_conv_avx2.cpp) and must not be run where cpu::detected_isa() < kAvx2.
//
// Float error: the transforms multiply by up to 8 (A^T) and 5 (B^T) and G holds 1/6 and 1/24, so
// the result's rounding error is larger than a direct convolution's: up to ~2e-6 of the sum of
// |products| per output, against ~1e-7 (tests/winograd_conv_test.cpp bounds it at 1e-5).
#pragma once

#include <cstdint>
#include <vector>

#include "core/cpu_isa.h"

namespace sd::native::ops {

// The epilogue, applied in order after the bias (FusedConv's post ops, conv_attrs.h).
enum class WinoPostKind { kRelu, kLeakyRelu, kSilu, kSigmoid, kHardSwish, kClip, kSum };
struct WinoPost {
  WinoPostKind kind;
  float alpha = 0, beta = 0;  // LeakyRelu's slope, Clip's bounds
};

struct WinogradGeometry {
  int64_t n, c, h, w, oc;  // output is [n, h, w, oc]: stride 1, pad 1
};

class WinogradConv {
 public:
  // Whether the kernel handles this convolution (the shape rules above; the ISA is the caller's
  // business: run() needs AVX2 + FMA).
  static bool applies(int64_t c, int64_t oc, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w, int64_t dilation_h,
                      int64_t dilation_w, int64_t group, int64_t pt, int64_t pl, int64_t pb, int64_t pr);

  // weights: OIHW [oc, c, 3, 3]; bias: [oc] or null. Transforms and packs the weights.
  WinogradConv(const WinogradGeometry& g, const float* weights, const float* bias, std::vector<WinoPost> posts);

  // src: [n, h, w, c]; dst: [n, h, w, oc]; sum: the residual operand, [n, h, w, oc], needed
  // when the epilogue has a kSum. Needs AVX2 + FMA (cpu::detected_isa() >= kAvx2).
  void run(const float* src, float* dst, const float* sum, int threads) const;

  // Tiles per block (a multiple of 6): the unit of work a thread takes.
  int64_t tiles_per_block() const { return block_tiles_; }

 private:
  WinogradGeometry g_;
  std::vector<float> packed_;  // [36][oc / 16 (then 8)][c][16 (or 8)]: U = G g G^T by position
  std::vector<float> bias_;    // [oc]
  std::vector<WinoPost> posts_;
  int64_t block_tiles_ = 6;
};

namespace wino {

// One run's inputs for the ISA-specific kernel (winograd_conv_avx2.cpp).
struct RunArgs {
  WinogradGeometry g;
  const float* packed;
  const float* bias;
  const WinoPost* posts;
  int64_t post_count;
  int64_t block_tiles;
  const float* src;
  float* dst;
  const float* sum;
  int threads;
};

#if defined(__x86_64__)
void run_avx2(const RunArgs& a);
#endif

}  // namespace wino

}  // namespace sd::native::ops
