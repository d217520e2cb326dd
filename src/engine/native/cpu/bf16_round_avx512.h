// 16 floats rounded to bf16 as vcvtneps2bf16 does (bf16_convert.h: nearest even, denormals to
// signed zero, NaN quieted), for the *_avx512*.cpp files only: vcvtneps2bf16 itself where the file
// is compiled with AVX512_BF16, else the same rounding in AVX-512F integer instructions (our
// float32 AVX-512 kernels can run where a bf16 tensor is wanted: the timing at load picks them).
// Internal linkage (static): a header's inline function compiled with different ISA flags in
// several files must not become one shared symbol (docs/benchmarks.md's pitfalls).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace sd::native::ops {

static inline __m256i round_to_bf16_avx512(__m512 x) {
#if defined(__AVX512BF16__)
  return (__m256i)_mm512_cvtneps_pbh(x);
#else
  const __m512i u = _mm512_castps_si512(x), hi = _mm512_srli_epi32(u, 16);
  const __m512i exponent = _mm512_and_si512(u, _mm512_set1_epi32(0x7f800000));
  const __mmask16 zero_or_denormal = _mm512_cmpeq_epi32_mask(exponent, _mm512_setzero_si512());
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  r = _mm512_mask_mov_epi32(r, zero_or_denormal, _mm512_and_si512(hi, _mm512_set1_epi32(0x8000)));
  r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
  return _mm512_cvtepi32_epi16(r);
#endif
}

static inline void store_bf16_avx512(uint16_t* p, __m512 x) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), round_to_bf16_avx512(x)); }

// Two bf16 values (a channel pair) as one 32-bit lane, for vdpbf16ps's broadcast operand.
static inline int32_t bf16_pair_at(const uint16_t* p) {
  int32_t x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

#if defined(__AVX512BF16__)
// The bf16 GEMM micro-kernels' inner loop (our bf16 Winograd and 1x1 kernels): acc[r][q] +=
// row r of a (k bf16 values at ar[r], channels in order) times b packed [k / 2][16 * NV][2] (each
// output channel's pair of consecutive channels side by side), one vdpbf16ps per channel pair and
// 16 output channels. k even.
template <int NV, int R>
static inline void accumulate_bf16_pairs(const uint16_t* const (&ar)[R], const uint16_t* b, int64_t k, __m512 (&acc)[R][NV]) {
  constexpr int kNr = 16 * NV;
  for (int64_t i = 0; i < k; i += 2) {
    __m512bh bv[NV];
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) bv[q] = (__m512bh)_mm512_loadu_si512(b + i * kNr + q * 32);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(bf16_pair_at(ar[r] + i));
#pragma GCC unroll 4
      for (int q = 0; q < NV; ++q) acc[r][q] = _mm512_dpbf16_ps(acc[r][q], av, bv[q]);
    }
  }
}
#endif

}  // namespace sd::native::ops
