// Int16Pointwise's weight packing (tap by tap) (once, at load) and the dispatch to its AVX2 kernel; and
// make_int16_conv, which picks the int16 kernel for a convolution.
#include "engine/native/cpu/pointwise_int16.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "core/cpu_isa.h"
#include "engine/native/cpu/winograd_int16.h"

namespace sd::native::ops {

bool Int16Pointwise::applies(const ConvGeometry& g) {
  return g.group == 1 && g.c >= 16 && g.c % 16 == 0 && g.oc % 16 == 0 && g.kh * g.kw * g.c <= 65536 && g.sh >= 1 && g.sw >= 1 &&
         g.dh >= 1 && g.dw >= 1;
}

Int16Pointwise::Int16Pointwise(const ConvGeometry& g, const int8_t* weights, const std::vector<float>& w_scales, const float* bias,
                               float x_scale, int32_t x_zero_point, bool x_signed)
    : g_(g), x_zero_(x_zero_point), x_signed_(x_signed), avx_vnni_(cpu::avx_vnni_active()) {
  const int64_t C = g.c, OC = g.oc, taps = g.kh * g.kw, K = taps * C;
  packed_.assign(static_cast<size_t>(K * OC), 0);
  scale_.resize(static_cast<size_t>(OC));
  for (int64_t o = 0; o < OC; ++o) {
    scale_[static_cast<size_t>(o)] = x_scale * w_scales[w_scales.size() == 1 ? 0 : static_cast<size_t>(o)];
    for (int64_t c = 0; c < C; ++c)
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t k = t * C + c;  // the row's order: tap by tap, each tap's channels
        packed_[static_cast<size_t>(((o / 16) * (K / 2) + k / 2) * 32 + (o % 16) * 2 + k % 2)] = weights[(o * C + c) * taps + t];
      }
  }
  bias_.assign(static_cast<size_t>(OC), 0.f);
  if (bias) std::copy(bias, bias + OC, bias_.begin());
}

void Int16Pointwise::compute(const uint8_t* src, const Int16Output& out, int threads) const {
#if defined(__x86_64__)
  pw16::run_avx2({g_, packed_.data(), scale_.data(), bias_.data(), x_zero_, x_signed_, src, out, std::max(1, threads), avx_vnni_});
#else
  (void)src, (void)out, (void)threads;
  std::abort();  // callers check cpu::detected_isa() >= kAvx2 first, which never holds here
#endif
}

std::unique_ptr<Int16Conv> make_int16_conv(const ConvGeometry& g, const int8_t* weights, const std::vector<float>& w_scales, const float* bias,
                                           float x_scale, int32_t x_zero_point, bool x_signed) {
  if (Int16Winograd::applies(g)) return std::make_unique<Int16Winograd>(g, weights, w_scales, bias, x_scale, x_zero_point, x_signed);
  if (Int16Pointwise::applies(g)) return std::make_unique<Int16Pointwise>(g, weights, w_scales, bias, x_scale, x_zero_point, x_signed);
  return nullptr;
}

}  // namespace sd::native::ops
