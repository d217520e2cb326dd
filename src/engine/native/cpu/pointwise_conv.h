// Our 1x1 convolution: stride 1, no padding, group 1, float32, channels-last in and out, with the
// FusedConv epilogue (bias, activations, residual sum) applied in registers before the one store
// of each result. Two variants, chosen when the weights are packed: AVX-512 (output channels a
// multiple of 16) and AVX2 + FMA (a multiple of 8).
//
// Why hand-written: a 1x1 convolution is a GEMM, [pixels, c] x [c, oc], and oneDNN's 1x1 kernels
// run that part as fast, but YOLO's 1x1 layers end in SiLU, which oneDNN 2.6 computes slower than
// the convolution itself on narrow layers (dnnl_conv.cpp: our own pass over the output instead).
// That pass reads and writes the whole output a second time; here the activation runs on the
// accumulators, so the output is written once. And a destination, source or sum may lie inside
// wider channels (a pixel stride, as our Winograd takes them), which oneDNN 2.6's jit kernels
// refuse: a C2f block's `cv1` writes straight into its Concat's rows (exec/plan_concat.cpp).
//
// The GEMM: the micro-kernels of our Winograd (winograd_conv.h): AVX-512 6x64 (24 accumulators,
// 4 weight vectors), AVX2 6x16 (12 accumulators, 2 weight vectors), the accumulators starting at
// the bias; the weights packed once in panels (wino::panel_width: 64 wide on AVX-512, 80 as
// 48 + 32; 16 on AVX2, the last 8) so each panel is one stream. Pixels go in blocks of
// kBlockPixels, each thread (parallel.h) an even share of the blocks; a block's rows are
// multiplied by each panel in turn, so its source rows stay in L1/L2 while the panels stream from
// L2. Timed against oneDNN's primitive per node at load (dnnl_conv.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/winograd_conv.h"

namespace sd::native::ops {

struct PointwiseGeometry {
  int64_t pixels, c, oc;  // n * h * w pixels of c channels in, oc out
};

// A part of the source's channels in a tensor of its own (a Concat along the channels that no
// step wrote, read by this 1x1 convolution: exec/plan_concat.cpp): `c` channels of each pixel,
// pixels `stride` floats apart. The parts in order are the source's channels in order, so the
// weights multiply the same values in the same order as on the concatenated source.
// A part may be upsampled (`up` 2: a nearest 2x Resize read where it stands, no step wrote it):
// pixel (n, y, x) of the h x w output reads pixel (n, y / 2, x / 2) of the part's h/2 x w/2.
struct SrcPart {
  const float* src = nullptr;
  int64_t c = 0, stride = 0;
  int64_t up = 1, h = 0, w = 0;       // up > 1: the output's h and w
  const uint16_t* src_bf16 = nullptr;  // the bf16 variant's source (c even), in place of src
};

// The rows of output pixels p0 .. p0 + R - 1 in part `sp` whose data starts at `base` (its src or
// src_bf16): a pixel stride apart, or where its upsampling puts them (the first pixel's found by
// division, the next ones stepped to).
template <int R, class T>
inline void part_rows(const SrcPart& sp, const T* base, int64_t p0, const T* (&ar)[R]) {
  if (sp.up == 1) {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) ar[r] = base + (p0 + r) * sp.stride;
    return;
  }
  int64_t x = p0 % sp.w, y = p0 / sp.w % sp.h, n = p0 / (sp.w * sp.h);
  for (int r = 0; r < R; ++r) {
    ar[r] = base + ((n * (sp.h / sp.up) + y / sp.up) * (sp.w / sp.up) + x / sp.up) * sp.stride;
    if (++x == sp.w && (x = 0, ++y == sp.h)) y = 0, ++n;
  }
}

namespace pointwise {

// At most this many parts (YOLOv8's SPPF Concat has four).
inline constexpr int kMaxParts = 4;

// One run's inputs for the ISA-specific kernels.
struct RunArgs {
  PointwiseGeometry g;
  const float* packed;
  const float* bias;
  const WinoPost* posts;
  int64_t post_count;
  float* dst;
  const float* sum;
  int threads;
  int64_t dst_stride, sum_stride;  // elements a pixel
  SrcPart parts[kMaxParts] = {};   // the source, in 1 to kMaxParts parts (one: the whole source)
  int part_count = 0;
  const uint16_t* packed_bf16 = nullptr;  // the bf16 variant's: its weights, and its result where
  uint16_t* dst_bf16 = nullptr;           // kept bf16 (else dst)
};

}  // namespace pointwise

class PointwiseConv {
 public:
  // Whether the kernel takes this convolution on a processor running `isa` (AVX2 and up).
  static bool applies(int64_t c, int64_t oc, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w, int64_t group, int64_t pt,
                      int64_t pl, int64_t pb, int64_t pr, cpu::Isa isa = cpu::active_isa());

  // weights: [oc, c] (OIHW with 1x1); bias: [oc] or null. Packs the weights for the variant
  // `isa` allows (AVX-512 from kAvx512 up where oc is a multiple of 16, else AVX2; tests pass each
  // runnable level to compare the variants on one processor). bf16 = true asks for the bf16
  // variant (--precision bf16 on a bf16 source tensor: pairs of channels multiplied by vdpbf16ps
  // into float32 sums, the epilogue in float32), taken from kAvx512Bf16 up where c is even and oc
  // a multiple of 16 (bf16() says whether it was).
  PointwiseConv(const PointwiseGeometry& g, const float* weights, const float* bias, std::vector<WinoPost> posts,
                cpu::Isa isa = cpu::active_isa(), bool bf16 = false);

  // The bf16 variant's run: src [pixels, c] in bf16; the result into dst (float32) or, where
  // dst_bf16 is given, rounded to bf16 (as oneDNN's reorder rounds) into dst_bf16. Strides in
  // elements, as run()'s.
  void run_bf16(const uint16_t* src, float* dst, uint16_t* dst_bf16, const float* sum, int threads, WinoStrides strides = {}) const;
  // The same with the bf16 source in parts (their src_bf16; each part's channels even).
  void run_bf16_parts(std::span<const SrcPart> parts, float* dst, uint16_t* dst_bf16, const float* sum, int threads,
                      WinoStrides strides = {}) const;
  bool bf16() const { return bf16_; }

  // src: [pixels, c]; dst: [pixels, oc]; sum: [pixels, oc] where the epilogue has a kSum.
  // strides: floats from one pixel to the next of each (0: dense). Needs the ISA of the variant.
  void run(const float* src, float* dst, const float* sum, int threads, WinoStrides strides = {}) const;
  // The same with the source in parts (float32 variants; 1 to pointwise::kMaxParts parts whose
  // channels add up to c; strides.src unused).
  void run_parts(std::span<const SrcPart> parts, float* dst, const float* sum, int threads, WinoStrides strides = {}) const;

  // "streamdet:pointwise:avx512" or "streamdet:pointwise:avx2" (the plan's implementation name).
  const char* name() const {
    return bf16_ ? "streamdet:pointwise:avx512_bf16" : avx512_ ? "streamdet:pointwise:avx512" : "streamdet:pointwise:avx2";
  }

  // Pixels a block: a multiple of the micro-kernel's 6 rows.
  static constexpr int64_t kBlockPixels = 48;

 private:
#if defined(__x86_64__)
  // The arguments every run shares, the source in `parts` (a bf16 result is set by the caller).
  pointwise::RunArgs args(std::span<const SrcPart> parts, float* dst, const float* sum, int threads, WinoStrides strides) const;
#endif

  PointwiseGeometry g_;
  bool avx512_ = false;        // which kernel run() calls (and how packed_ is laid out)
  bool bf16_ = false;          // the bf16 variant (avx512_ too): packed_bf16_, run_bf16()
  std::vector<float> packed_;  // [panels][c][panel width]
  std::vector<uint16_t> packed_bf16_;  // [panels][c / 2][panel width][2]
  std::vector<float> bias_;    // [oc]
  std::vector<WinoPost> posts_;
};

namespace pointwise {

#if defined(__x86_64__)
void run_avx512(const RunArgs& a);
void run_avx2(const RunArgs& a);
void run_avx512bf16(const RunArgs& a);
#endif

}  // namespace pointwise

}  // namespace sd::native::ops
