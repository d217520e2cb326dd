// PointwiseConv's weight packing (once, at load) and the call into its AVX-512 or AVX2 kernel.
#include "engine/native/cpu/pointwise_conv.h"

#include <algorithm>
#include <cstdlib>

namespace sd::native::ops {

bool PointwiseConv::applies(int64_t c, int64_t oc, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w, int64_t group, int64_t pt,
                            int64_t pl, int64_t pb, int64_t pr, cpu::Isa isa) {
#if defined(__x86_64__)
  return isa >= cpu::Isa::kAvx2 && kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1 && group == 1 && pt == 0 && pl == 0 &&
         pb == 0 && pr == 0 && c >= 1 && oc >= 8 && oc % 8 == 0;
#else
  (void)c, (void)oc, (void)kh, (void)kw, (void)stride_h, (void)stride_w, (void)group, (void)pt, (void)pl, (void)pb, (void)pr, (void)isa;
  return false;
#endif
}

PointwiseConv::PointwiseConv(const PointwiseGeometry& g, const float* weights, const float* bias, std::vector<WinoPost> posts,
                             cpu::Isa isa)
    : g_(g), avx512_(isa >= cpu::Isa::kAvx512 && g.oc % 16 == 0), posts_(std::move(posts)) {
  const int64_t C = g.c, OC = g.oc;
  packed_.assign(static_cast<size_t>(C * OC), 0.f);
#if defined(__x86_64__)
  for (int64_t o0 = 0, nr = 0; o0 < OC; o0 += nr) {
    nr = wino::panel_width(avx512_, OC, o0);
    float* panel = packed_.data() + o0 * C;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t l = 0; l < nr; ++l) panel[c * nr + l] = weights[(o0 + l) * C + c];
  }
#endif
  bias_.assign(static_cast<size_t>(OC), 0.f);
  if (bias) std::copy(bias, bias + OC, bias_.begin());
}

void PointwiseConv::run(const float* src, float* dst, const float* sum, int threads, WinoStrides strides) const {
#if defined(__x86_64__)
  const pointwise::RunArgs args{g_,
                                packed_.data(),
                                bias_.data(),
                                posts_.data(),
                                static_cast<int64_t>(posts_.size()),
                                src,
                                dst,
                                sum,
                                std::max(1, threads),
                                strides.src > 0 ? strides.src : g_.c,
                                strides.dst > 0 ? strides.dst : g_.oc,
                                strides.sum > 0 ? strides.sum : g_.oc};
  if (avx512_)
    pointwise::run_avx512(args);
  else
    pointwise::run_avx2(args);
#else
  (void)src, (void)dst, (void)sum, (void)threads, (void)strides;
  std::abort();  // applies() is false here: never constructed to run
#endif
}

}  // namespace sd::native::ops
