// What the CPU's int8 convolutions compute exactly (no oneDNN header: the loader asks).
#pragma once

namespace sd::native {

// True where oneDNN's int8 convolutions use VNNI (vpdpbusd: u8 x s8 products summed in int32).
// Without it (AVX2, AVX-512 without VNNI) they use vpmaddubsw, which adds pairs of u8 x s8
// products in int16 and saturates: 255 x 127 x 2 > 32767; and for an int8 source oneDNN 2.6
// halves the weights (its "scale adjust" 0.5, which rounds odd ones). There, a uint8 source with
// weights of 7 bits (|w| <= 63, ONNX Runtime's reduce_range) is exact; anything else is not
// (checked with ONEDNN_MAX_CPU_ISA=AVX2 on a VNNI machine: values one step off).
// avx2_vnni is counted out: oneDNN 2.6's AVX2 int8 kernels were not checked to use it.
bool int8_dot_products_exact();

}  // namespace sd::native
