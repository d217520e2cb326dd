// BinExpectation's row loop compiled for AVX-512 (-march=x86-64-v4).
#define STREAMDET_ISA_VARIANT avx512
#define STREAMDET_BIN_ROW_FN row_avx512
#define STREAMDET_BIN_VECTOR f32x16
#include "engine/native/cpu/bin_expectation_row.inc"
