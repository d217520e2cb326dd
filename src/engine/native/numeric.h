// Arithmetic that is defined for every input. C++ leaves undefined what a model's data can
// easily produce: NaN or out-of-range floats converted to integers, signed integer overflow
// (the fuzzer, running under UBSan, found both). ONNX does not specify these cases either; the
// engine gives what ONNX Runtime gives on x86 where that is a clear rule (two's-complement
// wrapping for integer arithmetic) and a saturating conversion otherwise.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

namespace sd::native {

// Float -> integer: NaN gives 0, out-of-range values saturate at the integer type's limits,
// in-range values truncate toward zero as static_cast does. Other conversions: static_cast.
template <class To, class From>
To saturate_cast(From v) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> && !std::is_same_v<To, bool>) {
    if (std::isnan(v)) return To{0};
    // The limits as From: int64's max rounds up to 2^63 as a float, hence >=.
    constexpr auto lo = static_cast<From>(std::numeric_limits<To>::min());
    constexpr auto hi = static_cast<From>(std::numeric_limits<To>::max());
    if (v <= lo) return std::numeric_limits<To>::min();
    if (v >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Integer +, -, *, negation wrapping modulo 2^bits (done in the unsigned type, where it is
// defined; the conversion back is modular since C++20). Floats: the plain operation.
template <class T>
using wrap_unsigned_t = std::conditional_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, std::make_unsigned_t<T>, T>;

template <class T>
T wrapping_add(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) return x + y;
  else return static_cast<T>(static_cast<wrap_unsigned_t<T>>(x) + static_cast<wrap_unsigned_t<T>>(y));
}
template <class T>
T wrapping_sub(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) return x - y;
  else return static_cast<T>(static_cast<wrap_unsigned_t<T>>(x) - static_cast<wrap_unsigned_t<T>>(y));
}
template <class T>
T wrapping_mul(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    return x * y;
  } else {
    // uint8 * uint8 promotes to int; 1u * keeps the product unsigned for every width.
    return static_cast<T>(1u * static_cast<wrap_unsigned_t<T>>(x) * static_cast<wrap_unsigned_t<T>>(y));
  }
}
template <class T>
T wrapping_neg(T x) {
  if constexpr (std::is_floating_point_v<T>) return -x;
  else return static_cast<T>(wrap_unsigned_t<T>{0} - static_cast<wrap_unsigned_t<T>>(x));
}

}  // namespace sd::native
