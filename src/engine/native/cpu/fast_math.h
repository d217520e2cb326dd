// Branch-free float exp the compiler vectorizes (to the ISA of the file including it): range reduction
// to 2^n * e^r with |r| <= ln2/2 and a degree-6 polynomial; ~1e-7 relative error over the
// float range, tested against std::exp. One template serves a float (in loops the compiler
// vectorizes) and an explicit 16-lane vector (kernels written with vector types, such as the
// stem convolution's fused activations), so both give the same results.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

// Without AVX-512 enabled (a build without -march=native) compilers warn that 64-byte vector
// arguments change the calling convention; these are inline functions of one build, so the
// convention is always the same one.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

// Files compiled for one ISA (stem_conv_avx512.cpp...) define STREAMDET_ISA_VARIANT first: these
// inline functions then get names of their own there, so the linker never substitutes an AVX-512
// copy for the baseline one (both are emitted as weak symbols of the same name otherwise).
#ifndef STREAMDET_ISA_VARIANT
#define STREAMDET_ISA_VARIANT baseline
#endif

namespace sd::native::ops {
inline namespace STREAMDET_ISA_VARIANT {

// GCC/Clang vector extension types: 16 lanes, one AVX-512 register; 8 lanes, one AVX2 register
// (kernels whose natural width is 8 channels: where 512-bit instructions issue at half the rate
// of 256-bit ones, as on this project's Zen 5 machines, a half-used 16-lane vector costs double).
using f32x16 = float __attribute__((vector_size(64)));
using i32x16 = int32_t __attribute__((vector_size(64)));
using f32x8 = float __attribute__((vector_size(32)));
using i32x8 = int32_t __attribute__((vector_size(32)));
using f32x4 = float __attribute__((vector_size(16)));  // one SSE register (the x86-64-v2 baseline)
using i32x4 = int32_t __attribute__((vector_size(16)));

template <class V>
inline V splat(float f) {
  if constexpr (std::is_same_v<V, float>) return f;
  else return V{} + f;
}

namespace detail {
inline int32_t to_i32(float n) { return static_cast<int32_t>(n); }
inline i32x16 to_i32(f32x16 n) { return __builtin_convertvector(n, i32x16); }
inline i32x8 to_i32(f32x8 n) { return __builtin_convertvector(n, i32x8); }
inline i32x4 to_i32(f32x4 n) { return __builtin_convertvector(n, i32x4); }
inline float from_bits(int32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
inline f32x16 from_bits(i32x16 b) {
  f32x16 f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
inline f32x8 from_bits(i32x8 b) {
  f32x8 f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
inline f32x4 from_bits(i32x4 b) {
  f32x4 f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
}  // namespace detail

template <class V>
inline V fast_exp_of(V x) {
  // The clamp is written so NaN compares false and becomes -87: the float->int conversion
  // below is undefined for NaN. NaN is given back at the end, as std::exp does (a select,
  // so the loop still vectorizes). +-inf clamp to e^88 and e^-87.
  const V in = x;
  const V lo = splat<V>(-87.0f), hi = splat<V>(88.0f);
  x = x > lo ? x : lo;
  x = x < hi ? x : hi;
  // Round to nearest by the 1.5 * 2^23 trick: plain adds, so the loop vectorizes.
  const V n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  V r = x - n * 0.693145751953125f;  // ln2 split in two for an exact reduction
  r = r - n * 1.42860682030941723212e-6f;
  V p = splat<V>(1.0f / 720);
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const V scale = detail::from_bits((detail::to_i32(n) + 127) << 23);
  return in != in ? in : p * scale;
}

// Horizontal max and sum of one 16-lane vector by halving (4 shuffle + op steps): what a row
// of 16 (DFL's bins) needs, where a scalar loop is a 16-long dependency chain.
inline float hmax(f32x16 v) {
  f32x16 s = __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  v = v > s ? v : s;
  s = __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
  v = v > s ? v : s;
  s = __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
  v = v > s ? v : s;
  s = __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
  v = v > s ? v : s;
  return v[0];
}
inline float hsum(f32x16 v) {
  v += __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  v += __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
  v += __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
  v += __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
  return v[0];
}

inline float fast_exp(float x) { return fast_exp_of(x); }
inline float fast_sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }

}  // namespace STREAMDET_ISA_VARIANT
}  // namespace sd::native::ops

#pragma GCC diagnostic pop
