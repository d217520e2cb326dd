// The stem kernel for AVX2 + FMA: 16 registers of 8 floats, so 6 pixels of 16 channels (12
// accumulators) or 12 pixels of 8 channels per block (compiled with -march=x86-64-v3).
#define STREAMDET_ISA_VARIANT avx2
#define STREAMDET_VECTOR_BYTES 32
#define STREAMDET_STEM_ROW_FN row_avx2
#include "engine/native/cpu/stem_conv_rows.inc"
