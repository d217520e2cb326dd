// Int8Table's byte lookup, AVX-512 (byte_table_kernel.h); compiled with the AVX-512 flags
// (CMakeLists.txt), VBMI's part with its own target attribute, taken where CPUID has it.
#include <immintrin.h>

#include "engine/native/cpu/byte_table_kernel.h"

namespace sd::native::ops::byte_table {

namespace {
__attribute__((target("avx512vbmi"))) inline __m512i vbmi_lookup(__m512i v, __m512i t0, __m512i t1, __m512i t2, __m512i t3) {
  const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);  // entries 0..127 by the low 7 bits
  const __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);  // 128..255
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi);
}
}  // namespace

__attribute__((target("avx512vbmi"))) void lookup_avx512_vbmi(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(y + i, vbmi_lookup(_mm512_loadu_si512(x + i), t0, t1, t2, t3));
  if (i < n) {
    const __mmask64 m = _cvtu64_mask64((~0ULL) >> (64 - (n - i)));
    _mm512_mask_storeu_epi8(y + i, m, vbmi_lookup(_mm512_maskz_loadu_epi8(m, x + i), t0, t1, t2, t3));
  }
}

void lookup_avx512_bw(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) {
  __m512i rows[16];
  for (int r = 0; r < 16; ++r) rows[r] = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * r)));
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  auto one = [&](__m512i v) {
    const __m512i lo = _mm512_and_si512(v, low4);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    __m512i r = _mm512_setzero_si512();
    for (int k = 0; k < 16; ++k) r = _mm512_mask_shuffle_epi8(r, _mm512_cmpeq_epi8_mask(hi, _mm512_set1_epi8(static_cast<char>(k))), rows[k], lo);
    return r;
  };
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(y + i, one(_mm512_loadu_si512(x + i)));
  if (i < n) {
    const __mmask64 m = _cvtu64_mask64((~0ULL) >> (64 - (n - i)));
    _mm512_mask_storeu_epi8(y + i, m, one(_mm512_maskz_loadu_epi8(m, x + i)));
  }
}

bool has_vbmi() {
  static const bool vbmi = __builtin_cpu_supports("avx512vbmi");
  return vbmi;
}

void lookup_avx512(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) {
  if (has_vbmi()) lookup_avx512_vbmi(x, y, n, table);
  else lookup_avx512_bw(x, y, n, table);
}

}  // namespace sd::native::ops::byte_table
