#include <random>

#include "postprocess/score_scan.h"
#include "postprocess_test_util.h"

namespace sd {
namespace {

TEST(ScoreScan, ColumnMaxMatchesPlain) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int rows : {1, 2, 3, 80, 81})
    for (int n : {1, 7, 16, 17, 512}) {
      const int stride = n + 5;
      std::vector<float> data(static_cast<size_t>(rows * stride));
      for (float& v : data) v = u(rng);
      std::vector<float> fast(static_cast<size_t>(n)), plain(static_cast<size_t>(n));
      scan::column_max(data.data(), stride, rows, n, fast.data());
      scan::column_max_plain(data.data(), stride, rows, n, plain.data());
      EXPECT_EQ(fast, plain) << rows << " rows, " << n << " columns";
    }
}

TEST(ScoreScan, RowKernelsMatchPlain) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int n = 1; n <= 100; ++n)
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> p(static_cast<size_t>(n));
      for (float& v : p) v = u(rng) * 0.5f;
      if (trial % 2) p[rng() % static_cast<size_t>(n)] = 0.75f;  // a peak anywhere, tails included
      EXPECT_EQ(scan::row_max(p.data(), n), scan::row_max_plain(p.data(), n));
      for (float t : {0.25f, 0.5f, 0.75f, 0.76f})
        EXPECT_EQ(scan::row_any_at_least(p.data(), n, t), scan::row_any_at_least_plain(p.data(), n, t)) << n << " " << t;
    }
}

TEST(ScoreScan, ArgmaxAndFindPickTheFirstOfEqualValues) {
  float p[20] = {};
  p[5] = p[17] = 0.9f;
  EXPECT_EQ(scan::row_argmax(p, 20), 5);
  EXPECT_EQ(scan::column_find(p, 1, 20, 0.9f), 5);
  EXPECT_EQ(scan::column_find(p, 2, 10, 0.5f), -1);
}

}  // namespace
}  // namespace sd
