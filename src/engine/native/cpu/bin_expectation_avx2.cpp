// BinExpectation's row loop compiled for AVX2 + FMA (-march=x86-64-v3).
#define STREAMDET_ISA_VARIANT avx2
#define STREAMDET_BIN_ROW_FN row_avx2
#define STREAMDET_BIN_VECTOR f32x8
#include "engine/native/cpu/bin_expectation_row.inc"
