// Winograd F(4x4, 3x3) convolution for the AVX2 and AVX-512 paths: 3x3, stride 1, pad 1, group 1, float32,
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
// weights stream from L2: winograd_conv.cpp says what was measured); each of the engine's threads
// (parallel.h) takes an even share of the tiles, in blocks (one block where the share is small,
// so that the weights are read once: winograd_transforms.inc, block_tiles_for), and a block's
// GEMM multiplies only its tiles (a short last block has no padding rows). The kernel has two variants, chosen when the weights are packed:
// AVX2 + FMA (winograd_conv_avx2.cpp, 8 channels a register, a 6x16 micro-kernel) and AVX-512
// (winograd_conv_avx512.cpp, 16 channels a register, a 6x64 micro-kernel on the 32 registers;
// channels and output channels multiples of 16, else the AVX2 variant). Neither may be run where
// cpu::detected_isa() < kAvx2.
//
// With --precision bf16 a third variant (winograd_conv_avx512bf16.cpp, processors with
// AVX512_BF16) runs the 36 GEMMs in bf16: the transformed input and weights rounded to bf16, pairs
// of channels multiplied and summed by vdpbf16ps into float32 accumulators (twice the multiply-adds
// of an FMA an instruction); the transforms and the epilogue stay float32. Its error is bf16's
// (a relative 2^-9 on each transformed operand), about 1e-3 of the output's scale.
//
// Float error: the transforms multiply by up to 8 (A^T) and 5 (B^T) and G holds 1/6 and 1/24, so
// the result's rounding error is larger than a direct convolution's: up to ~2e-6 of the sum of
// |products| per output, against ~1e-7 (tests/winograd_conv_test.cpp bounds it at 1e-5).
//
// F(6x6, 3x3) (WinoTile::k6x6; every variant: AVX2, AVX-512, and AVX-512 with the bf16 GEMM): a
// 6x6 output tile from an 8x8 input
// tile, 64 multiplications per channel pair for 36 outputs (1.78 an output against F(4x4)'s
// 2.25: 21% fewer GEMM flops), with the same block driver and panel GEMM over 64 positions. The
// price: larger transforms (about the same arithmetic per output as F(4x4)'s, in more registers
// than there are: the 8x8 intermediate spills to L1; transforms are ~40% of its time against
// GEMM's ~50%), tiles that overhang where 6 does not divide the size (80 -> 84, 40 -> 42,
// 20 -> 24: computed and dropped), 64/36 the weight bytes streamed per block (16 MiB for a
// 256 -> 256 layer, probably why that one runs 1.6x slower at 20x20), and more float error (A^T up to 32,
// B^T up to 21/4, G's 1/90 and 32/45: tests/winograd_conv_test.cpp derives its bound; with the
// bf16 GEMM 2-4x bf16 F(4x4)'s worst error, measured, and the same AP on the synthetic detector:
// docs/benchmarks.md, "bf16 Winograd F(6x6, 3x3)"). Where it
// is faster is measured per node at load (cpu/dnnl_conv.cpp), beside F(4x4, 3x3) and oneDNN, on
// maps of 48x48 and more (smaller ones lost in the model: docs/benchmarks.md).
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

// The arithmetic of the 36 GEMMs: float32, or bf16 products with float32 sums (--precision bf16).
enum class WinoGemm { kFloat32, kBf16 };

// The output tile: F(4x4, 3x3) or F(6x6, 3x3) (every variant).
enum class WinoTile { k4x4, k6x6 };

// Floats from one pixel to the next of run()'s tensors (0: dense).
struct WinoStrides {
  int64_t src = 0, dst = 0, sum = 0;
};

// run()'s tensors, each float32 or bf16 (one of the two pointers; the bf16 ones on the AVX-512
// variants only). sum: the residual operand where the epilogue has a kSum.
struct WinoIo {
  const float* src = nullptr;
  const uint16_t* src_bf16 = nullptr;
  float* dst = nullptr;
  uint16_t* dst_bf16 = nullptr;
  const float* sum = nullptr;
  const uint16_t* sum_bf16 = nullptr;
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

  // weights: OIHW [oc, c, 3, 3]; bias: [oc] or null. Transforms and packs the weights for the
  // variant `isa` allows: AVX-512 from kAvx512 up when both channel counts are multiples of 16,
  // AVX2 otherwise (tests pass each runnable level to compare the variants on one processor).
  // gemm = kBf16 asks for the bf16 variant: taken from kAvx512Bf16 up with both channel counts
  // multiples of 16, else the float32 variant as above (bf16() says which).
  // tile = k6x6 asks for F(6x6, 3x3), which every variant takes (tile() says which was taken).
  WinogradConv(const WinogradGeometry& g, const float* weights, const float* bias, std::vector<WinoPost> posts,
               cpu::Isa isa = cpu::active_isa(), WinoGemm gemm = WinoGemm::kFloat32, WinoTile tile = WinoTile::k4x4);

  // src: [n, h, w, c]; dst: [n, h, w, oc]; sum: the residual operand, [n, h, w, oc], needed
  // when the epilogue has a kSum. Needs AVX2 + FMA (cpu::detected_isa() >= kAvx2), and AVX-512
  // when the constructor chose that variant. strides: floats from one pixel to the next of each
  // (0: dense, c or oc; more: the tensor lies inside wider channels, exec/plan_concat.cpp: dst in
  // a Concat's output, src and sum a Split's part left in its input).
  // dst_bf16 (where writes_bf16()): the result rounded to bf16 as oneDNN's reorder rounds
  // (bf16_convert.h) into dst_bf16 instead of dst (--precision bf16, a result kept bf16; dense).
  void run(const float* src, float* dst, const float* sum, int threads, WinoStrides strides = {},
           uint16_t* dst_bf16 = nullptr) const;
  // The same with any of the three tensors in bf16 (the AVX-512 variants only: bf16_io()):
  // src_bf16 and sum_bf16 read as such, dst_bf16 written rounded as oneDNN's reorder rounds; each
  // at its pixel stride in elements (--precision bf16: tensors kept bf16 between convolutions,
  // precision.h, and a Split's parts or a Concat's rows among them).
  void run(const WinoIo& io, int threads, WinoStrides strides = {}) const;
  // Whether run() can read and write bf16 (the AVX-512 variants).
  bool writes_bf16() const { return avx512_; }
  bool bf16_io() const { return avx512_; }
  // --precision bf16: the float32 source and residual operand rounded to bf16 as they are read
  // (as a bf16 convolution reads its source, and as a tensor kept bf16 holds them), so that a
  // plan with bf16 tensors and one with float32 tensors give the same bytes. AVX-512 variants only.
  void round_inputs_to_bf16(bool on) { round_inputs_ = on && avx512_; }
  bool rounds_inputs_to_bf16() const { return round_inputs_; }

  // Tiles per block (a multiple of 6): the unit of work a thread takes.
  int64_t tiles_per_block() const { return block_tiles_; }

  // The variant the weights were packed for: "streamdet:wino_4x3:avx2", "...:avx512",
  // "...:avx512_bf16", "streamdet:wino_6x3:avx2" or "...:avx512" (the plan's implementation name).
  const char* name() const {
    return tile_ == WinoTile::k6x6 ? (bf16_ ? "streamdet:wino_6x3:avx512_bf16" : avx512_ ? "streamdet:wino_6x3:avx512" : "streamdet:wino_6x3:avx2")
           : bf16_                 ? "streamdet:wino_4x3:avx512_bf16"
           : avx512_               ? "streamdet:wino_4x3:avx512"
                                   : "streamdet:wino_4x3:avx2";
  }
  // The output tile taken (k6x6 where asked for).
  WinoTile tile() const { return tile_; }
  // Whether the GEMMs run in bf16 (the bf16 variant was taken).
  bool bf16() const { return bf16_; }

 private:
  WinogradGeometry g_;
  bool avx512_ = false;        // which kernel run() calls (and how packed_ is laid out)
  bool bf16_ = false;          // the bf16 variant (avx512_ too): packed_bf16_ instead of packed_
  bool round_inputs_ = false;  // round_inputs_to_bf16
  WinoTile tile_ = WinoTile::k4x4;
  std::vector<float> packed_;  // [36 or 64][panels][c][panel width]: U = G g G^T by position; panels of
                               // 16 output channels (the last 8) for AVX2, 64 (the last 16-48) for AVX-512
  std::vector<uint16_t> packed_bf16_;  // the bf16 variant's U, rounded to bf16: [36][panels][c / 2][panel width][2]
                                       // (channel pairs side by side, as vdpbf16ps takes them)
  std::vector<float> bias_;    // [oc]
  std::vector<WinoPost> posts_;
  int64_t block_tiles_ = 6;
};

namespace wino {

// One run's inputs for the ISA-specific kernels (winograd_conv_avx2.cpp, winograd_conv_avx512.cpp).
struct RunArgs {
  WinogradGeometry g;
  const float* packed;
  const uint16_t* packed_bf16;  // the bf16 variant's weights (packed is null then)
  const float* bias;
  const WinoPost* posts;
  int64_t post_count;
  int64_t block_tiles;
  int tile;  // 4: F(4x4, 3x3); 6: F(6x6, 3x3)
  const float* src;
  float* dst;
  const float* sum;
  int threads;
  int64_t dst_stride;  // floats from one pixel of dst to the next (g.oc: dense)
  uint16_t* dst_bf16 = nullptr;  // the result in bf16 instead of dst (the AVX-512 variants), at dst_stride
  int64_t src_stride = 0;  // elements from one pixel of src to the next (g.c: dense)
  int64_t sum_stride = 0;  // ... of sum (g.oc: dense)
  const uint16_t* src_bf16 = nullptr;  // the source in bf16 instead of src (the AVX-512 variants)
  const uint16_t* sum_bf16 = nullptr;  // the residual operand in bf16 instead of sum (the same)
  bool round_inputs = false;           // src and sum (float32) rounded to bf16 as read (the same)
};

#if defined(__x86_64__)
void run_avx2(const RunArgs& a);
void run_avx512(const RunArgs& a);  // channels and output channels multiples of 16; tile 4 or 6
void run_avx512bf16(const RunArgs& a);  // the same, with AVX512_BF16 (packed_bf16)

// The width of the packed weight panel starting at output channel o0 of oc. AVX2: 16 (the last
// one 8 when oc is an odd multiple of 8). AVX-512: 64, the last one what is left, except that 80
// left are 48 + 32, not 64 + 16: the 16-wide micro-kernel has 6 accumulators, too few to hide the
// FMA latency (measured: 16% of the 80 -> 80 layer's time for 20% of its multiply-adds).
inline int64_t panel_width(bool avx512, int64_t oc, int64_t o0) {
  const int64_t left = oc - o0;
  if (!avx512) return left < 16 ? left : 16;
  return left == 80 ? 48 : left < 64 ? left : 64;
}
#endif

}  // namespace wino

}  // namespace sd::native::ops
