#include "engine/native/cpu/stem_conv.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "engine/native/cpu/stem_conv_kernel.h"
#include "engine/native/parallel.h"

namespace sd::native::ops {

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

void StemConv::prefetch_source_rows(const float* src, int64_t r) const {
  const int64_t n = r / g_.oh, oy = r % g_.oh;
  for (int64_t c = 0; c < g_.c; ++c)
    for (int64_t ky = 0; ky < g_.kh; ++ky) {
      const int64_t iy = oy * g_.sh - g_.pt + ky;
      if (iy < 0 || iy >= g_.h) continue;
      const auto* row = reinterpret_cast<const char*>(src + ((n * g_.c + c) * g_.h + iy) * g_.w);
      for (int64_t b = 0; b < g_.w * static_cast<int64_t>(sizeof(float)); b += 64) __builtin_prefetch(row + b, 0, 3);
    }
}

void StemConv::run(const float* src, bool src_nhwc, float* dst, int threads, const std::function<void(float*, int64_t)>& finish_rows) const {
  run_isa(cpu::active_isa(), src, src_nhwc, dst, threads, finish_rows);
}

void StemConv::run_isa(cpu::Isa isa, const float* src, bool src_nhwc, float* dst, int threads,
                       const std::function<void(float*, int64_t)>& finish_rows) const {
  const float* base = packed_.data() + (16 - (reinterpret_cast<uintptr_t>(packed_.data()) / sizeof(float)) % 16) % 16;
  const stem::RowArgs args{g_, base, bias_.data(), lanes_, ox_lo_, ox_hi_, act_, alpha_, beta_, src, src_nhwc, dst};
  const stem::RowFn row = stem::row_kernel(isa);
  parallel_for(g_.n * g_.oh, threads, 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      if (!src_nhwc && r + kPrefetchRows < r1) prefetch_source_rows(src, r + kPrefetchRows);
      row(args, r);
      if (finish_rows) finish_rows(dst + r * g_.ow * g_.oc, g_.ow * g_.oc);
    }
  });
}

}  // namespace sd::native::ops
