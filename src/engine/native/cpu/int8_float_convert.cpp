#include "engine/native/cpu/int8_float_convert.h"

namespace sd::native::ops::int8_float {

void dequantize_baseline(const uint8_t* x, int64_t n, const Quantization& q, float* y) {
  if (q.is_signed) {
    const auto* s = reinterpret_cast<const int8_t*>(x);
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<int32_t>(s[i]) - q.zero_point) * q.scale;
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - q.zero_point) * q.scale;
  }
}

void quantize_baseline(const float* x, int64_t n, const Quantization& q, const uint8_t* table, uint8_t* y) {
  const float lo = q.is_signed ? -128.f : 0.f, hi = q.is_signed ? 127.f : 255.f, zf = static_cast<float>(q.zero_point);
  for (int64_t i = 0; i < n; ++i) {
    float r = __builtin_rintf(x[i] / q.scale) + zf;
    r = r == r ? r : 0.f;
    r = r < lo ? lo : r;
    r = r > hi ? hi : r;
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(r));  // an int8 value's two's-complement byte
  }
  if (table)
    for (int64_t i = 0; i < n; ++i) y[i] = table[y[i]];
}

DequantizeFn dequantize_kernel(cpu::Isa isa) {
#if defined(__x86_64__)
  if (isa >= cpu::Isa::kAvx512) return dequantize_avx512;
  if (isa >= cpu::Isa::kAvx2) return dequantize_avx2;
#endif
  (void)isa;
  return dequantize_baseline;
}

QuantizeFn quantize_kernel(cpu::Isa isa) {
#if defined(__x86_64__)
  if (isa >= cpu::Isa::kAvx512) return quantize_avx512;
  if (isa >= cpu::Isa::kAvx2) return quantize_avx2;
#endif
  (void)isa;
  return quantize_baseline;
}

}  // namespace sd::native::ops::int8_float
