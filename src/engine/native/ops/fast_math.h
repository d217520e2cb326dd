// Branch-free float exp the compiler vectorizes (AVX-512 with -march=native): range reduction
// to 2^n * e^r with |r| <= ln2/2 and a degree-6 polynomial; ~1e-7 relative error over the
// float range, tested against std::exp.
#pragma once

#include <cstdint>
#include <cstring>

namespace sd::native::ops {

inline float fast_exp(float x) {
  // The clamp is written so NaN compares false and becomes -87: the float->int conversion
  // below is undefined for NaN. NaN is given back at the end, as std::exp does (a select,
  // so the loop still vectorizes). +-inf clamp to e^88 and e^-87.
  const float in = x;
  x = x > -87.0f ? x : -87.0f;
  x = x < 88.0f ? x : 88.0f;
  // Round to nearest by the 1.5 * 2^23 trick: plain adds, so the loop vectorizes.
  float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693145751953125f;  // ln2 split in two for an exact reduction
  r = r - n * 1.42860682030941723212e-6f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return in != in ? in : p * scale;
}

inline float fast_sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }

}  // namespace sd::native::ops
