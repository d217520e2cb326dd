// The tracker's assignment solver against brute force: every matching of small random matrices
// enumerated, the best total compared with the solver's, dense and sparse, square and not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <set>

#include "track/assignment.h"

namespace sd::track {
namespace {

// The heaviest matching's total, by trying every way to give each row a free column or none.
double brute_force_max_weight(const std::vector<double>& w, int rows, int cols) {
  std::vector<char> used(static_cast<size_t>(cols), 0);
  std::function<double(int)> best = [&](int r) -> double {
    if (r == rows) return 0.0;
    double b = best(r + 1);  // row r left unmatched
    for (int c = 0; c < cols; ++c) {
      const double x = w[static_cast<size_t>(r * cols + c)];
      if (used[static_cast<size_t>(c)] || !(x > 0)) continue;
      used[static_cast<size_t>(c)] = 1;
      b = std::max(b, x + best(r + 1));
      used[static_cast<size_t>(c)] = 0;
    }
    return b;
  };
  return best(0);
}

double total_weight(const Assignment& a, const std::vector<double>& w, int cols) {
  double t = 0;
  for (const auto& [r, c] : a.matches) t += w[static_cast<size_t>(r * cols + c)];
  return t;
}

// A valid result: each row and column at most once, only edges matched, the unmatched lists the
// complement of the matched ones.
void expect_consistent(const Assignment& a, const std::vector<double>& w, int rows, int cols) {
  std::set<int> rs, cs;
  for (const auto& [r, c] : a.matches) {
    EXPECT_TRUE(rs.insert(r).second) << "row " << r << " twice";
    EXPECT_TRUE(cs.insert(c).second) << "column " << c << " twice";
    EXPECT_GT(w[static_cast<size_t>(r * cols + c)], 0) << "non-edge matched";
  }
  EXPECT_EQ(rs.size() + a.unmatched_rows.size(), static_cast<size_t>(rows));
  EXPECT_EQ(cs.size() + a.unmatched_cols.size(), static_cast<size_t>(cols));
  for (int r : a.unmatched_rows) EXPECT_FALSE(rs.count(r));
  for (int c : a.unmatched_cols) EXPECT_FALSE(cs.count(c));
}

TEST(TrackAssignment, MaxWeightMatchingEqualsBruteForceOnRandomMatrices) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 3000; ++trial) {
    const int rows = static_cast<int>(rng() % 7), cols = static_cast<int>(rng() % 7);
    const double density = std::uniform_real_distribution<double>(0.1, 1.0)(rng);
    std::vector<double> w(static_cast<size_t>(rows * cols), 0.0);
    for (auto& x : w)
      if (std::uniform_real_distribution<double>(0, 1)(rng) < density)
        x = (trial % 3 == 0) ? static_cast<double>(rng() % 4 + 1)  // ties
                             : std::uniform_real_distribution<double>(0.01, 1.0)(rng);
    const Assignment a = max_weight_matching(w, rows, cols);
    expect_consistent(a, w, rows, cols);
    EXPECT_NEAR(total_weight(a, w, cols), brute_force_max_weight(w, rows, cols), 1e-9)
        << "trial " << trial << ", " << rows << "x" << cols;
  }
}

TEST(TrackAssignment, MinCostAssignmentIsLapjvWithACostLimit) {
  // lapjv(extend_cost=True, cost_limit=L): minimise matched costs + L/2 per row or column left.
  std::mt19937 rng(99);
  const double limit = 0.8;
  for (int trial = 0; trial < 2000; ++trial) {
    const int rows = static_cast<int>(rng() % 6), cols = static_cast<int>(rng() % 6);
    std::vector<double> cost(static_cast<size_t>(rows * cols));
    for (auto& c : cost) c = (rng() % 5 == 0) ? NAN : std::uniform_real_distribution<double>(0, 1.2)(rng);
    const Assignment a = min_cost_assignment(cost, rows, cols, limit);
    double objective = limit / 2 * static_cast<double>(a.unmatched_rows.size() + a.unmatched_cols.size());
    for (const auto& [r, c] : a.matches) {
      const double x = cost[static_cast<size_t>(r * cols + c)];
      EXPECT_LT(x, limit);
      objective += x;
    }
    std::vector<double> gain(cost.size());
    for (size_t i = 0; i < cost.size(); ++i) gain[i] = cost[i] < limit ? limit - cost[i] : 0;
    const double best = limit / 2 * (rows + cols) - brute_force_max_weight(gain, rows, cols);
    EXPECT_NEAR(objective, best, 1e-9) << "trial " << trial;
  }
}

TEST(TrackAssignment, DenseHungarianFindsTheCheapestPermutation) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 6), m = n + static_cast<int>(rng() % 3);
    std::vector<double> cost(static_cast<size_t>(n * m));
    for (auto& c : cost) c = std::uniform_real_distribution<double>(-5, 5)(rng);
    const std::vector<int> pick = hungarian_min_cost(cost, n, m);
    double got = 0;
    std::set<int> cols;
    for (int i = 0; i < n; ++i) {
      ASSERT_GE(pick[static_cast<size_t>(i)], 0);
      cols.insert(pick[static_cast<size_t>(i)]);
      got += cost[static_cast<size_t>(i * m + pick[static_cast<size_t>(i)])];
    }
    EXPECT_EQ(cols.size(), static_cast<size_t>(n));
    // Every injective map of rows to columns.
    std::vector<int> perm(static_cast<size_t>(m));
    std::iota(perm.begin(), perm.end(), 0);
    double best = INFINITY;
    do {
      double t = 0;
      for (int i = 0; i < n; ++i) t += cost[static_cast<size_t>(i * m + perm[static_cast<size_t>(i)])];
      best = std::min(best, t);
    } while (std::next_permutation(perm.begin(), perm.end()));
    EXPECT_NEAR(got, best, 1e-9) << "trial " << trial;
  }
}

// A tracking-sized problem: 120 tracks and detections, each overlapping a few neighbours. The
// component-wise solution weighs what one dense Hungarian over the whole matrix gives.
TEST(TrackAssignment, SparseLargeProblemMatchesTheDenseSolution) {
  std::mt19937 rng(5);
  const int n = 120;
  std::vector<double> w(static_cast<size_t>(n * n), 0.0);
  for (int r = 0; r < n; ++r)
    for (int c = std::max(0, r - 2); c <= std::min(n - 1, r + 2); ++c)
      if (rng() % 2) w[static_cast<size_t>(r * n + c)] = std::uniform_real_distribution<double>(0.05, 1.0)(rng);
  const Assignment a = max_weight_matching(w, n, n);
  expect_consistent(a, w, n, n);
  std::vector<double> cost(w.size());
  for (size_t i = 0; i < w.size(); ++i) cost[i] = -w[i];
  const std::vector<int> dense = hungarian_min_cost(cost, n, n);
  double dense_total = 0;
  for (int r = 0; r < n; ++r) dense_total += w[static_cast<size_t>(r * n + dense[static_cast<size_t>(r)])];
  EXPECT_NEAR(total_weight(a, w, n), dense_total, 1e-9);
}

TEST(TrackAssignment, EmptySidesLeaveEverythingUnmatched) {
  const Assignment a = max_weight_matching({}, 3, 0);
  EXPECT_TRUE(a.matches.empty());
  EXPECT_EQ(a.unmatched_rows, (std::vector<int>{0, 1, 2}));
  const Assignment b = min_cost_assignment({}, 0, 2, 0.8);
  EXPECT_EQ(b.unmatched_cols, (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace sd::track
