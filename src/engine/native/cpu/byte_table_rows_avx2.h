// A 256-entry byte table looked up 32 bytes at a time on AVX2 (byte_table_kernel.h's AVX2 lookups,
// and the quantization after an int8 layer with a fused SiLU's table, int8_float_convert_avx2.cpp):
// the table as 16 rows of 16, each row looked up by the low nibble (vpshufb), the row picked by
// the high nibble's bits (vpblendvb). Include only from files compiled with the AVX2
// flags (CMakeLists.txt).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "engine/native/cpu/byte_table_kernel.h"

namespace sd::native::ops::byte_table {

// The table as 16 rows of 16 bytes, each in both lanes of a register (vpshufb looks up per lane).
struct Rows {
  __m256i r[16];
  explicit Rows(const uint8_t* table) {
    for (int k = 0; k < 16; ++k) r[k] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * k)));
  }
  // Each row looked up by the low nibble, then the 16 results narrowed to one by the high
  // nibble's bits: bit 3 by vpshufb's own zeroing (an index with its top bit set gives 0: rows k
  // and k + 8 looked up with that bit as it is and flipped, and or-ed), bits 2, 1, 0 by vpblendvb
  // (the second where a mask byte's top bit is set; the byte shifted left by 1..3 in 16-bit lanes
  // has there its own bit 6, 5 or 4). 16 shuffles, 8 ors and 7 blends, four deep; a blend per row
  // in one chain, with a compare each (48 instructions), took 2.6x as long.
  __m256i lookup(__m256i v) const {
    const __m256i low = _mm256_and_si256(v, _mm256_set1_epi8(static_cast<char>(0x8F)));  // the low nibble and bit 7
    const __m256i high = _mm256_xor_si256(low, _mm256_set1_epi8(static_cast<char>(0x80)));
    __m256i t[8];
    for (int k = 0; k < 8; ++k) t[k] = _mm256_or_si256(_mm256_shuffle_epi8(r[k], low), _mm256_shuffle_epi8(r[k + 8], high));
    const __m256i m6 = _mm256_slli_epi16(v, 1);
    for (int k = 0; k < 4; ++k) t[k] = _mm256_blendv_epi8(t[k], t[k + 4], m6);
    const __m256i m5 = _mm256_slli_epi16(v, 2);
    for (int k = 0; k < 2; ++k) t[k] = _mm256_blendv_epi8(t[k], t[k + 2], m5);
    return _mm256_blendv_epi8(t[0], t[1], _mm256_slli_epi16(v, 3));
  }
  // The same on 16 bytes (a row of 16 channels: YOLOv8n's narrowest Split parts and Concat
  // inputs): the low lane of the 32-byte lookup.
  __m128i lookup(__m128i v) const { return _mm256_castsi256_si128(lookup(_mm256_zextsi128_si256(v))); }
  // n bytes: 32 at a time, then 16, then one by one.
  void lookup(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) const {
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), lookup(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
    if (i + 16 <= n) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), lookup(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
      i += 16;
    }
    lookup_baseline(x + i, y + i, n - i, table);
  }
};

}  // namespace sd::native::ops::byte_table
