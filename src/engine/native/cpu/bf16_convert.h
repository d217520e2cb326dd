// float32 -> bf16 conversion as the processor's vcvtneps2bf16 does it (and so oneDNN's reorder
// into bf16 on a processor with AVX512_BF16): round to nearest, ties to even; denormal inputs
// become zero of the same sign (the instruction ignores MXCSR and treats them as zero); NaN stays
// NaN with its quiet bit set (the upper 16 bits of the payload kept); infinities stay infinite.
// Used where a float32 tensor is written as bf16 for the oneDNN bf16 convolutions that read it
// (--precision bf16: cpu/concat_bf16.cpp), so that their result is bit for bit what converting
// the float32 tensor in the convolution gave.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sd::native::ops {

// One value, the reference for the vector kernels (and their tail on processors without AVX512_BF16).
inline uint16_t float_to_bf16_rne(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const uint32_t exponent = u & 0x7f800000u, mantissa = u & 0x007fffffu;
  if (exponent == 0x7f800000u && mantissa != 0) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN, quieted
  if (exponent == 0) return static_cast<uint16_t>((u >> 16) & 0x8000u);                              // zero, denormal: signed zero
  const uint32_t lsb = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7fffu + lsb) >> 16);  // carries into the exponent round up to infinity
}

// bf16 to float32: exact (a bf16 value is a float32 with its low 16 bits zero).
inline float bf16_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// `rows` rows of `cols` floats, `src_stride` floats apart, into `rows` rows of bf16 `dst_stride`
// elements apart: a Concat's inputs into their place in its output. The fastest variant this
// processor runs (AVX512_BF16's vcvtne2ps2bf16, AVX-512F integer instructions, or the scalar reference).
void floats_to_bf16_rows(const float* src, size_t src_stride, uint16_t* dst, size_t dst_stride, size_t rows, size_t cols);

// The variants, for the tests.
void floats_to_bf16_rows_portable(const float* src, size_t src_stride, uint16_t* dst, size_t dst_stride, size_t rows, size_t cols);
#if defined(__x86_64__)
void floats_to_bf16_rows_avx512bf16(const float* src, size_t src_stride, uint16_t* dst, size_t dst_stride, size_t rows, size_t cols);
void floats_to_bf16_rows_avx512(const float* src, size_t src_stride, uint16_t* dst, size_t dst_stride, size_t rows, size_t cols);
#endif
// Whether floats_to_bf16_rows runs the AVX512_BF16 variant here.
bool floats_to_bf16_is_vectorised();

}  // namespace sd::native::ops
