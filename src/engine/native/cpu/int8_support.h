// What the CPU's int8 convolutions compute exactly (no oneDNN header: the loader asks).
#pragma once

namespace sd::native {

// True where oneDNN's int8 convolutions use VNNI (vpdpbusd: u8 x s8 products summed in int32):
// AVX-512 VNNI, or AVX-VNNI's 256-bit form (oneDNN 2.6's jit_uni_int8:avx2_vnni kernels: the
// QdqFusion tests' full-range weights and int8 sources give the graph's values under
// --cpu-isa=avx2_vnni, as they do not under avx2).
// Without it (AVX2, AVX-512 without VNNI) they use vpmaddubsw, which adds pairs of u8 x s8
// products in int16 and saturates: 255 x 127 x 2 > 32767; and for an int8 source oneDNN 2.6
// halves the weights (its "scale adjust" 0.5, which rounds odd ones). There, a uint8 source with
// weights of 7 bits (|w| <= 63, ONNX Runtime's reduce_range) is exact; anything else is not
// (checked with ONEDNN_MAX_CPU_ISA=AVX2 on a VNNI machine: values one step off).
bool int8_dot_products_exact();

// True where those are AVX-512 VNNI's: they then run every int8 layer (68-81% of the int8 peak on
// YOLOv8n's); elsewhere each layer they compute exactly is timed at load against our float32 and
// int16 kernels (cpu/dnnl_qconv.cpp).
bool int8_kernels_avx512_vnni();

}  // namespace sd::native
