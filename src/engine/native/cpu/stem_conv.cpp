#include "engine/native/cpu/stem_conv.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "engine/native/cpu/fast_math.h"
#include "engine/native/parallel.h"

// 64-byte vectors passed between this file's internal functions: see fast_math.h.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace sd::native::ops {
namespace {

// V: the vector of output channels, f32x16 (one AVX-512 register) or, for layers of 8 or fewer
// outputs, f32x8 (one AVX2 register: on CPUs that run 512-bit instructions at half the rate of
// 256-bit ones, a half-filled 16-lane vector costs twice the work; the stem of an 8-channel
// model ran at the same speed as a 16-channel one).
template <class V>
constexpr int64_t kLanes = static_cast<int64_t>(sizeof(V) / sizeof(float));
// Output pixels per register block: 12 accumulators. With 8, each accumulator's chain of FMAs
// (3 per tap for a 3x3 kernel) was as long as the block's FMA throughput time, so any stall
// showed; 16 spill registers. Measured: the tiny model's stem 147 -> 143 us, an 8->8 3x3
// channels-last layer at 64x64 93 (oneDNN) -> 71 us.
constexpr int kPixels = 12;

// The first `lanes` floats of v: fixed sizes for the common widths (a variable-length memcpy is
// a library call per pixel).
template <class V>
inline void store(float* out, const V& v, int64_t lanes) {
  if (lanes == kLanes<V>) std::memcpy(out, &v, sizeof(V));
  else if (lanes == 8) std::memcpy(out, &v, 32);
  else for (int64_t l = 0; l < lanes; ++l) out[l] = v[l];
}

struct Activation {
  StemActivation kind;
  float alpha, beta;
};

template <class V>
inline V activate(V x, const Activation& a) {
  switch (a.kind) {
    case StemActivation::kNone: return x;
    case StemActivation::kRelu: return x > splat<V>(0.f) ? x : splat<V>(0.f);
    case StemActivation::kLeakyRelu: return x >= splat<V>(0.f) ? x : x * a.alpha;
    case StemActivation::kHardSwish: {
      V t = x / 6.0f + 0.5f;
      t = t > splat<V>(0.f) ? t : splat<V>(0.f);
      t = t < splat<V>(1.f) ? t : splat<V>(1.f);
      return x * t;
    }
    case StemActivation::kClip: {
      V t = x > splat<V>(a.alpha) ? x : splat<V>(a.alpha);
      return t < splat<V>(a.beta) ? t : splat<V>(a.beta);
    }
  }
  return x;
}

struct SrcStrides {
  int64_t c, y, x;  // in floats
};

// The input rows one output row reads: (channel, kernel row) pairs whose input row exists, with
// their weights. Built once per output row, so the pixel loops below carry no bounds checks on y
// and few live variables.
struct RowTap {
  const float* src;  // the input row (x = 0)
  const float* w;    // kw weight vectors (of V)
};
constexpr int kMaxRowTaps = 4 * 16;  // c <= 4 and kh <= 16, or c = 8 and kh = 3 (stem_conv_applies)

// P consecutive output pixels whose windows are inside the input along x. Template values > 0
// fix the kernel width, the stride and the input's x step at compile time (the usual stems), so
// that the P input columns are constant offsets from one pointer; 0: read from g and s.
template <class V, int P, int KW, int SW, int XS>
inline void interior_block(const RowTap* taps, int n_taps, const SrcStrides& s, V bias, const StemConvGeometry& g, int64_t ox0,
                           float* out, int64_t lanes, const Activation& act) {
  V acc[P];
  for (int p = 0; p < P; ++p) acc[p] = bias;
  const int64_t xs = XS > 0 ? XS : s.x, kw = KW > 0 ? KW : g.kw, step = (SW > 0 ? SW : g.sw) * xs;
  const int64_t x0 = (ox0 * g.sw - g.pl) * xs;
  for (int t = 0; t < n_taps; ++t) {
    const float* row = taps[t].src + x0;
    const V* wk = reinterpret_cast<const V*>(taps[t].w);
    for (int64_t kx = 0; kx < kw; ++kx) {
      const V wv = wk[kx];
      const float* px = row + kx * xs;
      for (int p = 0; p < P; ++p) acc[p] += px[p * step] * wv;
    }
  }
  for (int p = 0; p < P; ++p) store(out + p * g.oc, activate(acc[p], act), lanes);
}

// One output pixel with bounds checks on x (the borders).
template <class V>
inline void border_pixel(const RowTap* taps, int n_taps, const SrcStrides& s, V bias, const StemConvGeometry& g, int64_t ox, float* out,
                         int64_t lanes, const Activation& act) {
  V acc = bias;
  for (int t = 0; t < n_taps; ++t)
    for (int64_t kx = 0; kx < g.kw; ++kx) {
      const int64_t ix = ox * g.sw - g.pl + kx;
      if (ix < 0 || ix >= g.w) continue;
      acc += taps[t].src[ix * s.x] * reinterpret_cast<const V*>(taps[t].w)[kx];
    }
  store(out, activate(acc, act), lanes);
}

template <class V>
using RowInterior = void (*)(const RowTap*, int, const SrcStrides&, V, const StemConvGeometry&, int64_t&, int64_t, float*, int64_t,
                             const Activation&);

template <class V, int KW, int SW, int XS>
void row_interior(const RowTap* taps, int n_taps, const SrcStrides& s, V bias, const StemConvGeometry& g, int64_t& ox, int64_t ox_hi,
                  float* out, int64_t lanes, const Activation& act) {
  // The activation's branch is hoisted by instantiating per kind would multiply the variants;
  // it is one predictable switch per 8 pixels instead.
  for (; ox + kPixels <= ox_hi; ox += kPixels)
    interior_block<V, kPixels, KW, SW, XS>(taps, n_taps, s, bias, g, ox, out + ox * g.oc, lanes, act);
}

// Compiled variants for the usual stems read from NCHW: 3x3 (YOLOv8, v11, YOLOX after Focus),
// 6x6 (YOLOv5 v6+), 7x7 and 1x1, strides 1 and 2. Anything else runs the generic one.
template <class V>
RowInterior<V> pick_row_interior(const StemConvGeometry& g, bool src_nhwc) {
  if (!src_nhwc && g.sw == 2) {
    switch (g.kw) {
      case 3: return row_interior<V, 3, 2, 1>;
      case 6: return row_interior<V, 6, 2, 1>;
      case 7: return row_interior<V, 7, 2, 1>;
      case 1: return row_interior<V, 1, 2, 1>;
      default: break;
    }
  }
  if (!src_nhwc && g.sw == 1) {
    switch (g.kw) {
      case 3: return row_interior<V, 3, 1, 1>;
      case 1: return row_interior<V, 1, 1, 1>;
      default: break;
    }
  }
  if (src_nhwc && g.kw == 3 && g.sw == 1 && g.c == 8) return row_interior<V, 3, 1, 8>;  // the narrow layers (stem_conv_applies)
  return row_interior<V, 0, 0, 0>;
}

// The whole convolution with V-wide blocks of output channels; `packed` holds the weights as
// [oc / lanes][c][kh][kw][lanes], `bias` [oc rounded up to lanes].
template <class V>
void run_stem(const StemConvGeometry& g, const float* packed, const float* bias_padded, int64_t ox_lo, int64_t ox_hi, const Activation& act,
              const float* src, bool src_nhwc, float* dst, int threads, const std::function<void(float*, int64_t)>& finish_rows) {
  constexpr int64_t L = kLanes<V>;
  const SrcStrides s = src_nhwc ? SrcStrides{1, g.w * g.c, g.c} : SrcStrides{g.h * g.w, g.w, 1};
  const int64_t image = g.c * g.h * g.w, taps_per_block = g.c * g.kh * g.kw, rows = g.n * g.oh;
  const RowInterior<V> interior = pick_row_interior<V>(g, src_nhwc);
  parallel_for(rows, threads, 4, [&](int64_t r0, int64_t r1) {
    RowTap taps[kMaxRowTaps];
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / g.oh, oy = r % g.oh;
      const float* in = src + n * image;
      float* out_row = dst + r * g.ow * g.oc;
      for (int64_t ob = 0; ob < (g.oc + L - 1) / L; ++ob) {
        const int64_t lanes = std::min<int64_t>(L, g.oc - ob * L);
        const float* wp = packed + ob * taps_per_block * L;
        int n_taps = 0;
        for (int64_t ic = 0; ic < g.c; ++ic)
          for (int64_t ky = 0; ky < g.kh; ++ky) {
            const int64_t iy = oy * g.sh - g.pt + ky;
            if (iy >= 0 && iy < g.h) taps[n_taps++] = {in + ic * s.c + iy * s.y, wp + (ic * g.kh + ky) * g.kw * L};
          }
        V bias;
        std::memcpy(&bias, bias_padded + ob * L, sizeof bias);
        float* out = out_row + ob * L;
        int64_t ox = 0;
        for (; ox < ox_lo; ++ox) border_pixel<V>(taps, n_taps, s, bias, g, ox, out + ox * g.oc, lanes, act);
        interior(taps, n_taps, s, bias, g, ox, ox_hi, out, lanes, act);
        for (; ox < g.ow; ++ox) border_pixel<V>(taps, n_taps, s, bias, g, ox, out + ox * g.oc, lanes, act);
      }
      if (finish_rows) finish_rows(out_row, g.ow * g.oc);
    }
  });
}

}  // namespace

bool stem_conv_applies(int64_t c, int64_t oc, int64_t kh, int64_t kw, bool src_nhwc, const Attributes& attrs) {
  if (attrs.get_int("group", 1) != 1) return false;
  for (int64_t d : attrs.get_ints("dilations", {1, 1}))
    if (d != 1) return false;
  // Narrow channels-last layers: 8 channels into 8, 3x3 stride 1 (the C2f bottlenecks of an
  // 8-channel-wide model). oneDNN's kernels pad both to 16 channels there, four times the FMAs.
  const auto strides = attrs.get_ints("strides", {1, 1});
  const bool stride1 = strides.size() == 2 && strides[0] == 1 && strides[1] == 1;
  if (src_nhwc && c == 8 && oc == 8 && kh == 3 && kw == 3 && stride1) return true;
  // Images: 1 to 4 channels into 8 or more (fewer outputs waste most of each register).
  if (c < 1 || c > 4 || oc < 8) return false;
  if (kh < 1 || kh > 16) return false;  // RowTap's fixed array (and no stem is that tall)
  return true;
}

StemConv::StemConv(const StemConvGeometry& g, const float* weights, const float* bias, StemActivation act, float alpha, float beta)
    : g_(g), act_(act), alpha_(alpha), beta_(beta) {
  lanes_ = g.oc <= 8 ? 8 : 16;
  const int64_t L = lanes_, blocks = (g.oc + L - 1) / L, taps = g.c * g.kh * g.kw;  // the last block zero-padded
  // One spare block so that the data can start on a 64-byte boundary inside the vector.
  packed_.assign(static_cast<size_t>(blocks * taps * L + 16), 0.f);
  float* base = packed_.data() + (16 - (reinterpret_cast<uintptr_t>(packed_.data()) / sizeof(float)) % 16) % 16;
  for (int64_t ob = 0; ob < blocks; ++ob)
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t l = 0; l < L && ob * L + l < g.oc; ++l) base[(ob * taps + t) * L + l] = weights[(ob * L + l) * taps + t];
  bias_.assign(static_cast<size_t>(blocks * L), 0.f);
  if (bias) std::copy(bias, bias + g.oc, bias_.begin());
  // Interior columns: ox * sw - pl >= 0 and ox * sw - pl + kw - 1 <= w - 1.
  ox_lo_ = std::min(g.ow, (g.pl + g.sw - 1) / g.sw);
  const int64_t last = g.w - g.kw + g.pl;  // the largest ox * sw allowed
  ox_hi_ = last < 0 ? ox_lo_ : std::max(ox_lo_, std::min(g.ow, last / g.sw + 1));
}

void StemConv::run(const float* src, bool src_nhwc, float* dst, int threads, const std::function<void(float*, int64_t)>& finish_rows) const {
  const float* base = packed_.data() + (16 - (reinterpret_cast<uintptr_t>(packed_.data()) / sizeof(float)) % 16) % 16;
  const Activation act{act_, alpha_, beta_};
  if (lanes_ == 8) run_stem<f32x8>(g_, base, bias_.data(), ox_lo_, ox_hi_, act, src, src_nhwc, dst, threads, finish_rows);
  else run_stem<f32x16>(g_, base, bias_.data(), ox_lo_, ox_hi_, act, src, src_nhwc, dst, threads, finish_rows);
}

}  // namespace sd::native::ops
