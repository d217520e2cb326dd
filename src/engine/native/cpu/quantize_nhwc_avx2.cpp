// quantize_nhwc.h's three-channel row on AVX2 (compiled with the AVX2 flags, CMakeLists.txt): 8
// pixels of each channel quantized as QuantizeLinear does (divide, round half to even, add the
// zero point, NaN to 0, clamp), each int32's low byte gathered into 8 bytes, and the 24 bytes put
// in pixel order by two byte shuffles of two registers. The rest of a row (under 8 pixels) goes
// through the baseline. On the AVX2 path a 640x640 image took 0.79 ms a run with the baseline's
// byte-by-byte interleave (docs/benchmarks.md, "int8 on the AVX2 path").
#include <immintrin.h>

#include "engine/native/cpu/quantize_nhwc.h"

namespace sd::native::ops {
namespace {

// The shuffle masks that interleave [c0 x 8 | c1 x 8] (a) and [c2 x 8 | -] (b): output byte k is
// pixel k / 3's channel k % 3; 0x80 gives a zero, so each output is shuffle(a) | shuffle(b).
struct Interleave {
  __m128i a_lo, b_lo, a_hi, b_hi;
  Interleave() {
    alignas(16) uint8_t m[4][16];
    for (int k = 0; k < 24; ++k) {
      const int p = k / 3, c = k % 3;
      const auto from_a = static_cast<uint8_t>(c == 0 ? p : 8 + p), from_b = static_cast<uint8_t>(p);
      uint8_t* ma = m[k < 16 ? 0 : 2];
      uint8_t* mb = m[k < 16 ? 1 : 3];
      ma[k % 16] = c == 2 ? 0x80 : from_a;
      mb[k % 16] = c == 2 ? from_b : 0x80;
    }
    for (int k = 8; k < 16; ++k) m[2][k] = m[3][k] = 0x80;
    a_lo = _mm_load_si128(reinterpret_cast<const __m128i*>(m[0]));
    b_lo = _mm_load_si128(reinterpret_cast<const __m128i*>(m[1]));
    a_hi = _mm_load_si128(reinterpret_cast<const __m128i*>(m[2]));
    b_hi = _mm_load_si128(reinterpret_cast<const __m128i*>(m[3]));
  }
};

}  // namespace

void quantize3_row_avx2(const float* x, int64_t plane, int64_t len, float s, int32_t z, bool is_signed, uint8_t* y) {
  static const Interleave order;
  const __m256 vs = _mm256_set1_ps(s), vz = _mm256_set1_ps(static_cast<float>(z));
  const __m256 lo = _mm256_set1_ps(is_signed ? -128.f : 0.f), hi = _mm256_set1_ps(is_signed ? 127.f : 255.f);
  // Each int32's low byte to the bottom of its 128-bit lane, then the two lanes' 4 bytes together.
  const __m256i low_bytes = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                             0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i lanes = _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1);
  auto quantize8 = [&](const float* p) {
    __m256 r = _mm256_add_ps(_mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(p), vs), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
    r = _mm256_andnot_ps(_mm256_cmp_ps(r, r, _CMP_UNORD_Q), r);  // NaN to 0
    r = _mm256_min_ps(_mm256_max_ps(r, lo), hi);
    const __m256i b = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(_mm256_cvtps_epi32(r), low_bytes), lanes);
    return _mm256_castsi256_si128(b);  // 8 bytes in the low half: exact integers in range, their low bytes
  };
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    const __m128i a = _mm_unpacklo_epi64(quantize8(x + i), quantize8(x + plane + i));
    const __m128i b = quantize8(x + 2 * plane + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + 3 * i), _mm_or_si128(_mm_shuffle_epi8(a, order.a_lo), _mm_shuffle_epi8(b, order.b_lo)));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + 3 * i + 16), _mm_or_si128(_mm_shuffle_epi8(a, order.a_hi), _mm_shuffle_epi8(b, order.b_hi)));
  }
  if (i < len) quantize3_row_baseline(x + i, plane, len - i, s, z, is_signed, y + 3 * i);
}

}  // namespace sd::native::ops
