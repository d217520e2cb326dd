// WinogradConv's weight transform and packing (once, at load) and the dispatch to its AVX2 or
// AVX-512 kernel.
#include "engine/native/cpu/winograd_conv.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace sd::native::ops {
namespace {

// float32 to bf16, rounded to nearest even as vcvtneps2bf16 does (NaN kept a quiet NaN).
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace

bool WinogradConv::applies(int64_t c, int64_t oc, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w, int64_t dilation_h,
                           int64_t dilation_w, int64_t group, int64_t pt, int64_t pl, int64_t pb, int64_t pr) {
  return kh == 3 && kw == 3 && stride_h == 1 && stride_w == 1 && dilation_h == 1 && dilation_w == 1 && group == 1 && pt == 1 &&
         pl == 1 && pb == 1 && pr == 1 && c >= 16 && oc >= 16 && c % 8 == 0 && oc % 8 == 0;
}

WinogradConv::WinogradConv(const WinogradGeometry& g, const float* weights, const float* bias, std::vector<WinoPost> posts,
                           cpu::Isa isa, WinoGemm gemm, WinoTile tile)
    : g_(g),
      avx512_(isa >= cpu::Isa::kAvx512 && g.c % 16 == 0 && g.oc % 16 == 0),
      bf16_(avx512_ && gemm == WinoGemm::kBf16 && isa >= cpu::Isa::kAvx512Bf16),
      tile_(tile),
      posts_(std::move(posts)) {
  // G for F(4x4, 3x3) (Lavin & Gray, 2016), in double: the transformed weights are rounded once.
  static const double G4[6][3] = {{1.0 / 4, 0, 0},          {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                  {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
  // G for F(6x6, 3x3): Lavin & Gray's Toom-Cook construction on the points p = 0, 1, -1, 2, -2,
  // 1/2, -1/2 (row j: [1, p, p^2] / prod_{l != j} (p - p_l)) and infinity ([0, 0, 1]); row 0's
  // sign flipped with B^T's (winograd_transforms.inc has B^T and A^T).
  static const double G6[8][3] = {{1, 0, 0},
                                  {-2.0 / 9, -2.0 / 9, -2.0 / 9},
                                  {-2.0 / 9, 2.0 / 9, -2.0 / 9},
                                  {1.0 / 90, 1.0 / 45, 2.0 / 45},
                                  {1.0 / 90, -1.0 / 45, 2.0 / 45},
                                  {32.0 / 45, 16.0 / 45, 8.0 / 45},
                                  {32.0 / 45, -16.0 / 45, 8.0 / 45},
                                  {0, 0, 1}};
  const int kA = tile_ == WinoTile::k6x6 ? 8 : 6;
  const double(*G)[3] = tile_ == WinoTile::k6x6 ? G6 : G4;
  const int64_t C = g.c, OC = g.oc, P = kA * kA;
  if (bf16_)
    packed_bf16_.assign(static_cast<size_t>(P * C * OC), 0);
  else
    packed_.assign(static_cast<size_t>(P * C * OC), 0.f);
  // Output channels in panels as the kernel reads them (wino::panel_width): each one's panel start.
  std::vector<int64_t> panel_of(static_cast<size_t>(OC));
  for (int64_t o0 = 0, nr = 0; o0 < OC; o0 += nr) {
    nr = wino::panel_width(avx512_, OC, o0);
    std::fill(panel_of.begin() + o0, panel_of.begin() + o0 + nr, o0);
  }
  for (int64_t o = 0; o < OC; ++o) {
    const int64_t o0 = panel_of[static_cast<size_t>(o)], nr = wino::panel_width(avx512_, OC, o0), lane = o - o0;
    for (int64_t c = 0; c < C; ++c) {
      const float* k = weights + (o * C + c) * 9;
      double t[8][3];  // G g
      for (int i = 0; i < kA; ++i)
        for (int j = 0; j < 3; ++j) t[i][j] = G[i][0] * k[0 * 3 + j] + G[i][1] * k[1 * 3 + j] + G[i][2] * k[2 * 3 + j];
      for (int i = 0; i < kA; ++i)
        for (int j = 0; j < kA; ++j) {
          const double u = t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2];  // (G g) G^T
          const size_t panel = static_cast<size_t>((i * kA + j) * C * OC + o0 * C);
          if (bf16_)
            packed_bf16_[panel + static_cast<size_t>((c / 2 * nr + lane) * 2 + c % 2)] = to_bf16(static_cast<float>(u));
          else
            packed_[panel + static_cast<size_t>(c * nr + lane)] = static_cast<float>(u);
        }
    }
  }
  bias_.assign(static_cast<size_t>(OC), 0.f);
  if (bias) std::copy(bias, bias + OC, bias_.begin());
  // Six tiles a block (one micro-kernel row block): the block's transformed input and products
  // stay in L1/L2 and the weight panels stream from L2. Measured on YOLOv8n's shapes (Zen 5, one
  // thread, BM_Conv3x3Winograd): 6 was the fastest or within noise of it everywhere; 24 cost
  // 10-30% and 48 up to 60% (64->80 at 80x80: 1.7, 1.9 and 2.6 ms).
  block_tiles_ = 6;
}

void WinogradConv::run(const float* src, float* dst, const float* sum, int threads, WinoStrides strides,
                       uint16_t* dst_bf16) const {
  WinoIo io;
  io.src = src, io.dst = dst, io.sum = sum, io.dst_bf16 = avx512_ ? dst_bf16 : nullptr;  // AVX2: float32 into dst
  run(io, threads, strides);
}

void WinogradConv::run(const WinoIo& io, int threads, WinoStrides strides) const {
#if defined(__x86_64__)
  if (!avx512_ && (io.src_bf16 || io.sum_bf16 || io.dst_bf16)) std::abort();  // callers check bf16_io()
  const wino::RunArgs args{g_,
                           packed_.empty() ? nullptr : packed_.data(),
                           packed_bf16_.empty() ? nullptr : packed_bf16_.data(),
                           bias_.data(),
                           posts_.data(),
                           static_cast<int64_t>(posts_.size()),
                           block_tiles_,
                           tile_ == WinoTile::k6x6 ? 6 : 4,
                           io.src,
                           io.dst,
                           io.sum,
                           std::max(1, threads),
                           strides.dst > 0 ? strides.dst : g_.oc,
                           io.dst_bf16,
                           strides.src > 0 ? strides.src : g_.c,
                           strides.sum > 0 ? strides.sum : g_.oc,
                           io.src_bf16,
                           io.sum_bf16,
                           round_inputs_};
  if (bf16_)
    wino::run_avx512bf16(args);
  else if (avx512_)
    wino::run_avx512(args);
  else
    wino::run_avx2(args);
#else
  (void)io, (void)threads, (void)strides;
  std::abort();  // callers check cpu::detected_isa() >= kAvx2 first, which never holds here
#endif
}

}  // namespace sd::native::ops
