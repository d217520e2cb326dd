// Each thread's buffer for the blocked convolution kernels (our Winograd variants, the int16
// GEMM): at least `floats` floats, 64-byte aligned, kept between calls and grown when a larger
// layer comes. One per thread, shared by all of them: no kernel runs inside another.
#pragma once

#include <cstddef>

namespace sd::native::ops {

float* thread_floats(size_t floats);

}  // namespace sd::native::ops
