// The 2-D transpose of 32-bit elements under Transpose's tiled paths (cpu/shape_ops.cpp: the
// planner's layout conversions, NHWC <-> NCHW, and DFL's [1, A, 4, 16] -> [1, 16, 4, A]):
// dst[j * dst_ld + i] = src[i * src_ld + j] for i < rows, j < cols, 8x8 blocks transposed in
// registers (eight 32-byte loads and stores instead of 64 single-element ones), the ragged edges
// element by element. One variant per instruction set: the baseline build (x86-64-v2) lowered
// the 32-byte blocks to SSE pairs, and YOLOv8n's head conversions ran 2.5x slower in a portable
// binary than in a -march=native one (docs/benchmarks.md, "Transposes in the portable build").
#pragma once

#include <cstdint>

#include "core/cpu_isa.h"

namespace sd::native::ops::transpose {

using BlockFn = void (*)(const uint32_t* src, int64_t src_ld, uint32_t* dst, int64_t dst_ld, int64_t rows, int64_t cols);

void block_baseline(const uint32_t* src, int64_t src_ld, uint32_t* dst, int64_t dst_ld, int64_t rows, int64_t cols);
#if defined(__x86_64__)
void block_avx2(const uint32_t* src, int64_t src_ld, uint32_t* dst, int64_t dst_ld, int64_t rows, int64_t cols);
#endif

// The variant for `isa` (the highest at or below it).
BlockFn block_kernel(cpu::Isa isa);

}  // namespace sd::native::ops::transpose
