// Int16Pointwise's kernel for AVX2 (compiled with -march=x86-64-v3; pointwise_int16.h): the pixels
// in blocks, each block's source bytes widened to int16 minus the zero point (in L1), the GEMM by
// the int16 micro-kernel (6 pixels x 16 output channels), the bias, and each pixel's outputs
// written float32 or quantized.
#define STREAMDET_ISA_VARIANT avx2
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "engine/native/cpu/pointwise_int16.h"
#include "engine/native/parallel.h"

namespace sd::native::ops::pw16 {
namespace {

using I16 = __m256i;

#include "engine/native/cpu/int16_gemm_avx2.inc"

// Pixels a block: its int16 source (48 x c) and float outputs (48 x oc) stay in L1/L2 while the
// packed weights (c x oc int16) stream through once a block.
constexpr int64_t kBlockPixels = 48;

float* thread_buffer(size_t floats) {
  struct Freer {
    void operator()(float* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<float, Freer> buf;
  thread_local size_t have = 0;
  if (have < floats) {
    buf.reset(static_cast<float*>(std::aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64)));
    if (!buf) std::abort();  // out of memory for a few hundred KiB: nothing sensible to do
    have = floats;
  }
  return buf.get();
}

template <bool kSigned>
void run_blocks(const Args& a) {
  const int64_t C = a.c, OC = a.oc;
  parallel_for(a.pixels, a.threads, kBlockPixels, [&](int64_t begin, int64_t end) {
    float* buf = thread_buffer(static_cast<size_t>(kBlockPixels * C / 2 + kBlockPixels * OC));
    auto* x = reinterpret_cast<int16_t*>(buf);
    float* y = buf + kBlockPixels * C / 2;
    const I16 zp = _mm256_set1_epi16(static_cast<int16_t>(a.x_zero));
    for (int64_t p0 = begin; p0 < end; p0 += kBlockPixels) {
      const int64_t count = std::min(kBlockPixels, end - p0);
      const uint8_t* s = a.src + p0 * C;
      for (int64_t i = 0; i < count * C; i += 16)
        _mm256_storeu_si256(reinterpret_cast<I16*>(x + i), load_source16<kSigned>(s + i, zp));
      for (int64_t o0 = 0; o0 < OC; o0 += 16)
        for (int64_t t = 0; t < count; t += 6)
          micro_rows16(std::min<int64_t>(6, count - t), x + t * C, C, a.packed + o0 * C, C, C, y + t * OC + o0, OC, a.scale + o0);
      for (int64_t px = 0; px < count; ++px) {
        float* row = y + px * OC;
        for (int64_t o = 0; o < OC; o += 8) _mm256_storeu_ps(row + o, _mm256_add_ps(_mm256_loadu_ps(row + o), _mm256_loadu_ps(a.bias + o)));
        if (a.dst_q)
          a.quantize(row, OC, *a.y_q, a.table, a.dst_q + (p0 + px) * OC);
        else
          std::copy(row, row + OC, a.dst + (p0 + px) * OC);
      }
    }
  });
}

}  // namespace

void run_avx2(const Args& a) {
  if (a.x_signed)
    run_blocks<true>(a);
  else
    run_blocks<false>(a);
}

}  // namespace sd::native::ops::pw16
