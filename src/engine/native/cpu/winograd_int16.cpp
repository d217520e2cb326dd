// Int16Winograd's weight transform and packing (once, at load), the chunk of channels its int32
// sums can take, and the dispatch to its AVX2 kernel.
#include "engine/native/cpu/winograd_int16.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "core/cpu_isa.h"

namespace sd::native::ops {
namespace {

// G' = diag(kRowScale) G for F(4x4, 3x3): G (winograd_conv.cpp's G4) with its rows scaled to integers.
constexpr int kG[6][3] = {{6, 0, 0}, {-4, -4, -4}, {-4, 4, -4}, {1, 2, 4}, {1, -2, 4}, {0, 0, 1}};
constexpr int kRowScale[6] = {24, 24, 24, 24, 24, 1};
// Sum of |B^T[i][.]| per row (winograd_transforms.inc's input_rows<4>): |V[i][j]| <= kBRow[i] * kBRow[j] * max |d|.
constexpr int64_t kBRow[6] = {10, 10, 10, 6, 6, 10};

// The largest chunk of channels (even, at most c) whose int32 sums cannot overflow for any source:
// for every position p and output channel, each aligned chunk's sum of |U'| times the largest
// |V[p]| stays within int32. abs_u: |U'| as [36][oc][c]. Halving from c: a handful of checks.
int64_t safe_chunk(const std::vector<int32_t>& abs_u, int64_t c, int64_t oc, int64_t d_max) {
  const int64_t limit = std::numeric_limits<int32_t>::max();
  for (int64_t k = c;; k = std::max<int64_t>(2, (k / 2 + 1) / 2 * 2)) {
    bool fits = true;
    for (int p = 0; p < 36 && fits; ++p) {
      const int64_t v_max = kBRow[p / 6] * kBRow[p % 6] * d_max;
      for (int64_t o = 0; o < oc && fits; ++o) {
        const int32_t* u = abs_u.data() + (p * oc + o) * c;
        for (int64_t k0 = 0; k0 < c && fits; k0 += k) {
          int64_t sum = 0;
          for (int64_t i = k0; i < std::min(c, k0 + k); ++i) sum += u[i];
          fits = sum * v_max <= limit;
        }
      }
    }
    if (fits || k == 2) return k;  // two channels: |U'| * |V| * 2 <= 18432 * 25500 * 2 < 2^31 always
  }
}

}  // namespace

bool Int16Winograd::applies(const ConvGeometry& g) {
  return g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.group == 1 && g.pt == 1 && g.pl == 1 &&
         g.pb == 1 && g.pr == 1 && g.oh == g.h && g.ow == g.w && g.c >= 16 && g.c % 16 == 0 && g.oc % 16 == 0;
}

Int16Winograd::Int16Winograd(const ConvGeometry& g, const int8_t* weights, const std::vector<float>& w_scales, const float* bias,
                             float x_scale, int32_t x_zero_point, bool x_signed)
    : g_(g), x_zero_(x_zero_point), x_signed_(x_signed), avx_vnni_(cpu::avx_vnni_active()) {
  const int64_t C = g.c, OC = g.oc;
  packed_.assign(static_cast<size_t>(36 * C * OC), 0);
  scale_.assign(static_cast<size_t>(36 * OC), 0.f);
  std::vector<int32_t> abs_u(static_cast<size_t>(36 * OC * C));
  for (int64_t o = 0; o < OC; ++o) {
    const int64_t panel = o / 16, lane = o % 16;
    const float ws = w_scales[w_scales.size() == 1 ? 0 : static_cast<size_t>(o)];
    for (int p = 0; p < 36; ++p)
      scale_[static_cast<size_t>(p * OC + o)] = x_scale * ws / static_cast<float>(kRowScale[p / 6] * kRowScale[p % 6]);
    for (int64_t c = 0; c < C; ++c) {
      const int8_t* k = weights + (o * C + c) * 9;
      int32_t t[6][3];  // G' g
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 3; ++j) t[i][j] = kG[i][0] * k[0 * 3 + j] + kG[i][1] * k[1 * 3 + j] + kG[i][2] * k[2 * 3 + j];
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) {
          const int32_t u = t[i][0] * kG[j][0] + t[i][1] * kG[j][1] + t[i][2] * kG[j][2];  // (G' g) G'^T: |u| <= 18432
          const int p = i * 6 + j;
          packed_[static_cast<size_t>(((p * (OC / 16) + panel) * (C / 2) + c / 2) * 32 + lane * 2 + c % 2)] = static_cast<int16_t>(u);
          abs_u[static_cast<size_t>((p * OC + o) * C + c)] = std::abs(u);
        }
    }
  }
  bias_.assign(static_cast<size_t>(OC), 0.f);
  if (bias) std::copy(bias, bias + OC, bias_.begin());
  // The largest |source byte - zero point|: padding is 0 after the subtraction.
  const int32_t lo = x_signed ? -128 : 0, hi = x_signed ? 127 : 255;
  const int64_t d_max = std::max(std::abs(hi - x_zero_point), std::abs(lo - x_zero_point));
  chunk_ = safe_chunk(abs_u, C, OC, d_max);
}

void Int16Winograd::compute(const uint8_t* src, const Int16Output& out, int threads) const {
#if defined(__x86_64__)
  wino16::run_avx2({g_.n, g_.h, g_.w, g_.c, g_.oc, packed_.data(), scale_.data(), bias_.data(), chunk_, x_zero_, x_signed_, src, out,
                    std::max(1, threads), avx_vnni_});
#else
  (void)src, (void)out, (void)threads;
  std::abort();  // callers check cpu::detected_isa() >= kAvx2 first, which never holds here
#endif
}

}  // namespace sd::native::ops
