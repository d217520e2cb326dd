#include "engine/native/cpu/quantized_silu.h"

#include <algorithm>
#include <cmath>

namespace sd::native::ops {

std::array<uint8_t, 256> quantized_silu_table(const Attributes& a, bool in_signed, bool out_signed) {
  const float si = a.get_float("silu_in_scale", 1.f), so = a.get_float("silu_out_scale", 1.f);
  const int32_t zi = static_cast<int32_t>(a.get_int("silu_in_zero_point", 0)), zo = static_cast<int32_t>(a.get_int("silu_out_zero_point", 0));
  const float lo = out_signed ? -128.f : 0.f, hi = out_signed ? 127.f : 255.f;
  std::array<uint8_t, 256> lut{};
  for (int b = 0; b < 256; ++b) {
    const int32_t v = in_signed ? static_cast<int8_t>(b) : b;
    const float x = static_cast<float>(v - zi) * si;
    const float y = x * (1.f / (1.f + std::exp(-x)));
    const float q = std::clamp(std::nearbyint(y / so) + static_cast<float>(zo), lo, hi);
    lut[static_cast<size_t>(b)] = out_signed ? static_cast<uint8_t>(static_cast<int8_t>(q)) : static_cast<uint8_t>(q);
  }
  return lut;
}

}  // namespace sd::native::ops
