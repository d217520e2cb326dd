// Int8Table's byte lookup, the baseline variant and the dispatch (byte_table_kernel.h).
#include "engine/native/cpu/byte_table_kernel.h"

#include <algorithm>
#include <bit>
#include <type_traits>

namespace sd::native::ops::byte_table {

// The AVX-512 variant where this processor runs it, else the AVX2 one, else the baseline. The
// variants are compiled on x86-64 only (SD_X86_VARIANT names nothing elsewhere).
#if defined(__x86_64__)
#define SD_X86_VARIANT(fn) fn
#else
#define SD_X86_VARIANT(fn) nullptr
#endif
namespace {
// Fn from the baseline: the others may be nullptr.
template <class Fn>
Fn pick(cpu::Isa isa, std::type_identity_t<Fn> avx512, std::type_identity_t<Fn> avx2, Fn baseline) {
  if (avx512 && isa >= cpu::Isa::kAvx512) return avx512;
  return avx2 && isa >= cpu::Isa::kAvx2 ? avx2 : baseline;
}
}  // namespace

void lookup_baseline(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

void lookup_float_baseline(const uint8_t* x, float* y, int64_t n, const float* table) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

LookupFloatFn lookup_float_kernel(cpu::Isa isa) { return pick(isa, SD_X86_VARIANT(lookup_float_avx512), SD_X86_VARIANT(lookup_float_avx2), lookup_float_baseline); }

void add_float_baseline(const uint8_t* a, const uint8_t* b, int64_t n, const float* ta, const float* tb, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = ta[a[i]] + tb[b[i]];
}

namespace {
// x quantized as QuantizeLinear does (rint(x / s) + zf, clamped; NaN to 0), as a byte.
inline uint8_t quantize_byte(float x, const AddTables& q) {
  float r = __builtin_rintf(x / q.s) + q.zf;
  r = r == r ? r : 0.f;
  r = r < q.lo ? q.lo : r;
  r = r > q.hi ? q.hi : r;
  const auto v = static_cast<int32_t>(r);
  return q.lo < 0.f ? static_cast<uint8_t>(static_cast<int8_t>(v)) : static_cast<uint8_t>(v);
}
}  // namespace

void add_bytes_baseline(const uint8_t* a, const uint8_t* b, int64_t n, const float* ta, const float* tb, const AddTables& q, uint8_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = quantize_byte(ta[a[i]] + tb[b[i]], q);
}

void add3_float_baseline(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const float* ta, const float* tb,
                         const float* tc, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = (ta[a[i]] + tb[b[i]]) + tc[c[i]];
}

void add3_bytes_baseline(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const float* ta, const float* tb,
                         const float* tc, const AddTables& q, uint8_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = quantize_byte((ta[a[i]] + tb[b[i]]) + tc[c[i]], q);
}

Add3FloatFn add3_float_kernel(cpu::Isa isa) { return pick(isa, SD_X86_VARIANT(add3_float_avx512), SD_X86_VARIANT(add3_float_avx2), add3_float_baseline); }

Add3BytesFn add3_bytes_kernel(cpu::Isa isa) { return pick(isa, SD_X86_VARIANT(add3_bytes_avx512), SD_X86_VARIANT(add3_bytes_avx2), add3_bytes_baseline); }

void fill_pair_table(const float* ta, const float* tb, const AddTables& q, uint8_t* pairs) {
  uint8_t all_b[256];
  for (int b = 0; b < 256; ++b) all_b[b] = static_cast<uint8_t>(b);
  for (int a = 0; a < 256; ++a) {
    uint8_t same_a[256];
    std::fill(same_a, same_a + 256, static_cast<uint8_t>(a));
    add_bytes_baseline(same_a, all_b, 256, ta, tb, q, pairs + a * 256);
  }
  std::fill(pairs + 65536, pairs + kPairTableBytes, uint8_t{0});
}

void add_pairs_baseline(const uint8_t* a, const uint8_t* b, int64_t n, const uint8_t* pairs, uint8_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = pairs[a[i] << 8 | b[i]];
}

AddPairsFn add_pairs_kernel(cpu::Isa isa) { return pick(isa, SD_X86_VARIANT(add_pairs_avx512), SD_X86_VARIANT(add_pairs_avx2), add_pairs_baseline); }

AddFloatFn add_float_kernel(cpu::Isa isa) { return pick(isa, SD_X86_VARIANT(add_float_avx512), SD_X86_VARIANT(add_float_avx2), add_float_baseline); }

AddBytesFn add_bytes_kernel(cpu::Isa isa) { return pick(isa, SD_X86_VARIANT(add_bytes_avx512), SD_X86_VARIANT(add_bytes_avx2), add_bytes_baseline); }

BytePlanes byte_planes(const float* table) {
  BytePlanes p{};
  for (int e = 0; e < 256; ++e) {
    const auto bits = std::bit_cast<uint32_t>(table[e]);
    for (int k = 0; k < 4; ++k) p.plane[k][e] = static_cast<uint8_t>(bits >> (8 * k));
  }
  return p;
}

void lookup_rows_baseline(const uint8_t* x, int64_t x_stride, uint8_t* y, int64_t y_stride, int64_t rows, int64_t c, const uint8_t* table) {
  for (int64_t r = 0; r < rows; ++r, x += x_stride, y += y_stride) lookup_baseline(x, y, c, table);
}

LookupRowsFn lookup_rows_kernel(cpu::Isa isa) { return pick(isa, SD_X86_VARIANT(lookup_rows_avx512), SD_X86_VARIANT(lookup_rows_avx2), lookup_rows_baseline); }

LookupFn lookup_kernel(cpu::Isa isa) { return pick(isa, SD_X86_VARIANT(lookup_avx512), SD_X86_VARIANT(lookup_avx2), lookup_baseline); }

}  // namespace sd::native::ops::byte_table
