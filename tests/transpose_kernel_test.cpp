// Transpose's 2-D block kernel (cpu/transpose_kernel.h), each variant this processor runs,
// against the element-by-element transpose: sizes around its 8x8 blocks (1 to 33 rows and
// columns), leading dimensions wider than the block, and nothing written outside it.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/transpose_kernel.h"

namespace sd {
namespace {

namespace transpose = native::ops::transpose;

TEST(TransposeKernel, EachVariantIsTheElementwiseTranspose) {
  std::vector<std::pair<std::string, transpose::BlockFn>> variants{{"baseline", transpose::block_baseline}};
#if defined(__x86_64__)
  if (cpu::detected_isa() >= cpu::Isa::kAvx2) variants.emplace_back("avx2", transpose::block_avx2);
#endif
  EXPECT_EQ(transpose::block_kernel(cpu::Isa::kBaseline), transpose::block_baseline);
  for (const auto& [name, block] : variants)
    for (int64_t rows : {1, 7, 8, 9, 16, 33})
      for (int64_t cols : {1, 5, 8, 15, 24, 33}) {
        const int64_t src_ld = cols + 3, dst_ld = rows + 5;
        std::vector<uint32_t> src(static_cast<size_t>(rows * src_ld));
        for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint32_t>(i * 2654435761u);
        std::vector<uint32_t> dst(static_cast<size_t>(cols * dst_ld), 0xdeadbeefu);
        block(src.data(), src_ld, dst.data(), dst_ld, rows, cols);
        int64_t wrong = 0, outside = 0;
        for (int64_t j = 0; j < cols; ++j)
          for (int64_t i = 0; i < dst_ld; ++i) {
            const uint32_t v = dst[static_cast<size_t>(j * dst_ld + i)];
            if (i < rows)
              wrong += v != src[static_cast<size_t>(i * src_ld + j)];
            else
              outside += v != 0xdeadbeefu;
          }
        EXPECT_EQ(wrong, 0) << name << ", " << rows << "x" << cols;
        EXPECT_EQ(outside, 0) << name << ", " << rows << "x" << cols << ": written outside the block";
      }
}

}  // namespace
}  // namespace sd
