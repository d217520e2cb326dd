// quantize_nhwc.h: each image row (n, h) is quantized channel by channel into a small block of
// bytes (a loop GCC vectorizes), then the block's channels interleaved into the row's pixels.
#include "engine/native/cpu/quantize_nhwc.h"

#include <algorithm>
#include <array>
#include <type_traits>

#include "core/cpu_isa.h"

#include "engine/native/cpu/int8_float_convert.h"
#include "engine/native/parallel.h"

namespace sd::native::ops {
namespace {

constexpr int64_t kBlock = 256;  // pixels per block
constexpr int64_t kMaxBlockChannels = 16;  // channels quantized per block (more: in groups)

// The pixels [w0, w0 + len) of row (n, h): channels [c0, c0 + cn) quantized, then interleaved.
template <class T, int kC>
void block(const float* x, int64_t plane, int64_t c, int64_t c0, int64_t cn, int64_t len, float s, float zf, T* y) {
  std::array<std::array<T, kBlock>, kMaxBlockChannels> q;
  const int64_t channels = kC > 0 ? kC : cn;
  const int8_float::Quantization qz{s, static_cast<int32_t>(zf), std::is_signed_v<T>};
  for (int64_t k = 0; k < channels; ++k)
    int8_float::quantize_baseline(x + (c0 + k) * plane, len, qz, nullptr, reinterpret_cast<uint8_t*>(q[static_cast<size_t>(k)].data()));
  for (int64_t i = 0; i < len; ++i)
    for (int64_t k = 0; k < channels; ++k) y[i * c + c0 + k] = q[static_cast<size_t>(k)][static_cast<size_t>(i)];
}

// An image comes from memory (the run's other tensors evicted it), its three channels' rows as
// three streams the hardware prefetchers pick up late: each row (n, h) is asked for kPrefetchRows
// rows ahead, as the stem convolution does (stem_conv.h).
constexpr int64_t kPrefetchRows = 2;
void prefetch_rows(const float* x, int64_t plane, int64_t c, int64_t w) {
  for (int64_t k = 0; k < c; ++k)
    for (int64_t b = 0; b < w * static_cast<int64_t>(sizeof(float)); b += 64) __builtin_prefetch(reinterpret_cast<const char*>(x + k * plane) + b, 0, 3);
}

template <class T>
void run(const float* x, int64_t n, int64_t c, int64_t h, int64_t w, float s, int32_t z, T* y, int threads) {
  const int64_t plane = h * w;
  const float zf = static_cast<float>(z);
  const Quantize3RowFn row3 = quantize3_row_kernel();
  parallel_for(n * h, threads, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / h, row = r % h;
      const float* xr = x + b * c * plane + row * w;
      T* yr = y + (b * plane + row * w) * c;
      if (c == 3) {  // an image
        if (r + kPrefetchRows < r1) prefetch_rows(x + ((r + kPrefetchRows) / h) * c * plane + ((r + kPrefetchRows) % h) * w, plane, c, w);
        row3(xr, plane, w, s, z, std::is_signed_v<T>, reinterpret_cast<uint8_t*>(yr));
        continue;
      }
      for (int64_t w0 = 0; w0 < w; w0 += kBlock) {
        const int64_t len = std::min(kBlock, w - w0);
        for (int64_t c0 = 0; c0 < c; c0 += kMaxBlockChannels)
          block<T, 0>(xr + w0, plane, c, c0, std::min(kMaxBlockChannels, c - c0), len, s, zf, yr + w0 * c);
      }
    }
  });
}

}  // namespace

void quantize3_row_baseline(const float* x, int64_t plane, int64_t len, float scale, int32_t zero_point, bool is_signed, uint8_t* y) {
  const float zf = static_cast<float>(zero_point);
  for (int64_t w0 = 0; w0 < len; w0 += kBlock) {
    const int64_t n = std::min(kBlock, len - w0);
    if (is_signed) block<int8_t, 3>(x + w0, plane, 3, 0, 3, n, scale, zf, reinterpret_cast<int8_t*>(y) + w0 * 3);
    else block<uint8_t, 3>(x + w0, plane, 3, 0, 3, n, scale, zf, y + w0 * 3);
  }
}

Quantize3RowFn quantize3_row_kernel() {
#if defined(__x86_64__)
  if (cpu::active_isa() >= cpu::Isa::kAvx512 && __builtin_cpu_supports("avx512vbmi")) return quantize3_row_avx512_vbmi;
  if (cpu::active_isa() >= cpu::Isa::kAvx2) return quantize3_row_avx2;
#endif
  return quantize3_row_baseline;
}

void quantize_to_nhwc(const float* x, int64_t n, int64_t c, int64_t h, int64_t w, float scale, int32_t zero_point, bool is_signed,
                      void* y, int threads) {
  if (is_signed) run(x, n, c, h, w, scale, zero_point, static_cast<int8_t*>(y), threads);
  else run(x, n, c, h, w, scale, zero_point, static_cast<uint8_t*>(y), threads);
}

}  // namespace sd::native::ops
