// Int8Table's byte-to-byte lookup (cpu/int8_table_ops.cpp): y[i] = table[x[i]] over a 256-entry
// byte table, one variant per instruction set. Scalar, a load per byte, on the baseline; on
// AVX-512 64 bytes at a time: with VBMI (vpermi2b, two 128-entry halves) where the processor has
// it, else with AVX-512 BW's in-lane shuffles over the 16 rows of 16 entries; on AVX2 32 at a
// time over the 16 rows (byte_table_avx2.cpp). Every function below has an AVX2 variant
// (`..._avx2`) beside the AVX-512 one, taken on the AVX2 path.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cpu_isa.h"

namespace sd::native::ops::byte_table {

using LookupFn = void (*)(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table);

void lookup_baseline(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table);
#if defined(__x86_64__)
void lookup_avx512(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table);  // one of the two below
void lookup_avx512_bw(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table);
void lookup_avx512_vbmi(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table);  // only where has_vbmi()
void lookup_avx2(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table);
bool has_vbmi();
#endif

// The variant for `isa` (the highest at or below it).
LookupFn lookup_kernel(cpu::Isa isa);

// The same lookup over `rows` rows of c bytes, x's rows x_stride bytes apart, y's y_stride (an
// Int8Table reading its channels inside a Split's input or writing them inside a Concat's output:
// exec/plan_concat.cpp); the table is loaded once for all rows, where one lookup call a row would
// load it per row of 16 bytes.
using LookupRowsFn = void (*)(const uint8_t* x, int64_t x_stride, uint8_t* y, int64_t y_stride, int64_t rows, int64_t c, const uint8_t* table);
void lookup_rows_baseline(const uint8_t* x, int64_t x_stride, uint8_t* y, int64_t y_stride, int64_t rows, int64_t c, const uint8_t* table);
#if defined(__x86_64__)
void lookup_rows_avx512(const uint8_t* x, int64_t x_stride, uint8_t* y, int64_t y_stride, int64_t rows, int64_t c, const uint8_t* table);  // one of:
void lookup_rows_avx512_bw(const uint8_t* x, int64_t x_stride, uint8_t* y, int64_t y_stride, int64_t rows, int64_t c, const uint8_t* table);
void lookup_rows_avx512_vbmi(const uint8_t* x, int64_t x_stride, uint8_t* y, int64_t y_stride, int64_t rows, int64_t c, const uint8_t* table);
void lookup_rows_avx2(const uint8_t* x, int64_t x_stride, uint8_t* y, int64_t y_stride, int64_t rows, int64_t c, const uint8_t* table);
#endif
LookupRowsFn lookup_rows_kernel(cpu::Isa isa);

// Int8Table to float: y[i] = table[x[i]] over 256 floats. AVX-512: 16 at a time, a gather from
// the table (1 KiB, in L1).
using LookupFloatFn = void (*)(const uint8_t* x, float* y, int64_t n, const float* table);
void lookup_float_baseline(const uint8_t* x, float* y, int64_t n, const float* table);
#if defined(__x86_64__)
void lookup_float_avx512(const uint8_t* x, float* y, int64_t n, const float* table);
void lookup_float_avx2(const uint8_t* x, float* y, int64_t n, const float* table);
#endif
LookupFloatFn lookup_float_kernel(cpu::Isa isa);

// Int8AddTables on equal shapes: y[i] = ta[a[i]] + tb[b[i]] as float, or that quantized as
// QuantizeLinear does (x / s rounded half to even, + zf, clamped to [lo, hi]; bytes of int8 or
// uint8). AVX-512: 16 at a time with gathers from the float tables.
struct AddTables {
  float s = 1.f, zf = 0.f, lo = 0.f, hi = 255.f;
};
using AddFloatFn = void (*)(const uint8_t* a, const uint8_t* b, int64_t n, const float* ta, const float* tb, float* y);
using AddBytesFn = void (*)(const uint8_t* a, const uint8_t* b, int64_t n, const float* ta, const float* tb, const AddTables& q, uint8_t* y);
void add_float_baseline(const uint8_t* a, const uint8_t* b, int64_t n, const float* ta, const float* tb, float* y);
void add_bytes_baseline(const uint8_t* a, const uint8_t* b, int64_t n, const float* ta, const float* tb, const AddTables& q, uint8_t* y);
#if defined(__x86_64__)
void add_float_avx512(const uint8_t* a, const uint8_t* b, int64_t n, const float* ta, const float* tb, float* y);
void add_bytes_avx512(const uint8_t* a, const uint8_t* b, int64_t n, const float* ta, const float* tb, const AddTables& q, uint8_t* y);
void add_float_avx2(const uint8_t* a, const uint8_t* b, int64_t n, const float* ta, const float* tb, float* y);
void add_bytes_avx2(const uint8_t* a, const uint8_t* b, int64_t n, const float* ta, const float* tb, const AddTables& q, uint8_t* y);
#endif
// The quantized sum as one lookup: a table of all 65536 pairs, pairs[a * 256 + b], filled by
// fill_pair_table with add_bytes_baseline's arithmetic (so the same bytes), read with one load
// per element (AVX-512: 16 at a time, a gather of 4 bytes at each index: kPairTableBytes holds
// the 3 bytes past the last entry).
inline constexpr size_t kPairTableBytes = 65536 + 4;
void fill_pair_table(const float* ta, const float* tb, const AddTables& q, uint8_t* pairs);
using AddPairsFn = void (*)(const uint8_t* a, const uint8_t* b, int64_t n, const uint8_t* pairs, uint8_t* y);
void add_pairs_baseline(const uint8_t* a, const uint8_t* b, int64_t n, const uint8_t* pairs, uint8_t* y);
#if defined(__x86_64__)
void add_pairs_avx512(const uint8_t* a, const uint8_t* b, int64_t n, const uint8_t* pairs, uint8_t* y);
void add_pairs_avx2(const uint8_t* a, const uint8_t* b, int64_t n, const uint8_t* pairs, uint8_t* y);
#endif
// Three tables: y = (ta[a] + tb[b]) + tc[c] in that order (an Add of an Int8AddTables' floats and
// a third table's, passes/int8_dataflow.cpp), as float32 or quantized as add_bytes does.
using Add3FloatFn = void (*)(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const float* ta, const float* tb,
                             const float* tc, float* y);
using Add3BytesFn = void (*)(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const float* ta, const float* tb,
                             const float* tc, const AddTables& q, uint8_t* y);
void add3_float_baseline(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const float* ta, const float* tb,
                         const float* tc, float* y);
void add3_bytes_baseline(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const float* ta, const float* tb,
                         const float* tc, const AddTables& q, uint8_t* y);
#if defined(__x86_64__)
void add3_float_avx512(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const float* ta, const float* tb,
                       const float* tc, float* y);
void add3_bytes_avx512(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const float* ta, const float* tb,
                       const float* tc, const AddTables& q, uint8_t* y);
void add3_float_avx2(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const float* ta, const float* tb, const float* tc,
                     float* y);
void add3_bytes_avx2(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const float* ta, const float* tb, const float* tc,
                     const AddTables& q, uint8_t* y);
#endif
// Int8AddTables to bytes on AVX-512 with VBMI, without gathers (a gather costs about two cycles
// an element here): each float table held as four byte planes (plane k: byte k of every entry),
// looked up 64 indices at a time as Int8Table's bytes are (vpermi2b), the planes interleaved back
// into the entries' floats. The same entries, summed in the same order and quantized as add_bytes
// and add3_bytes do: the same bytes. c == nullptr (and tc unused): two inputs.
struct BytePlanes {
  alignas(64) uint8_t plane[4][256];
};
BytePlanes byte_planes(const float* table);
#if defined(__x86_64__)
void add_planes_avx512_vbmi(const uint8_t* a, const uint8_t* b, const uint8_t* c, int64_t n, const BytePlanes& ta, const BytePlanes& tb,
                            const BytePlanes& tc, const AddTables& q, uint8_t* y);  // only where has_vbmi()
// The same over `rows` rows of `cols` elements, input k's rows in_stride[k] bytes apart (in[2] ==
// nullptr: two inputs), y's y_stride: rows narrower than a vector are taken four 16-byte pieces
// to a vector.
void add_planes_rows_avx512_vbmi(const uint8_t* const in[3], const int64_t in_stride[3], int64_t rows, int64_t cols, const BytePlanes& ta,
                                 const BytePlanes& tb, const BytePlanes& tc, const AddTables& q, uint8_t* y, int64_t y_stride);
#endif

Add3FloatFn add3_float_kernel(cpu::Isa isa);
Add3BytesFn add3_bytes_kernel(cpu::Isa isa);
AddPairsFn add_pairs_kernel(cpu::Isa isa);
AddFloatFn add_float_kernel(cpu::Isa isa);
AddBytesFn add_bytes_kernel(cpu::Isa isa);

}  // namespace sd::native::ops::byte_table
