// The stem kernel for AVX-512: 32 registers of 16 floats, 12 pixels per block (compiled with
// -march=x86-64-v4).
#define STREAMDET_ISA_VARIANT avx512
#define STREAMDET_VECTOR_BYTES 64
#define STREAMDET_STEM_ROW_FN row_avx512
#include "engine/native/cpu/stem_conv_rows.inc"
