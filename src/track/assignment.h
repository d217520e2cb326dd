// Linear assignment for tracking: which track takes which detection, and (in eval/) which
// ground-truth identity goes with which hypothesis.
//
// Both problems are a maximum-weight bipartite matching that need not be perfect: an edge (i, j)
// with weight w > 0 may be taken, no row or column twice, and the sum of the taken weights is as
// large as it can be. The tracker's form (ByteTrack's `lapjv(cost, extend_cost=True,
// cost_limit=L)`) is the same problem: a pair costs c, a row or column left alone costs L / 2, so
// taking a pair gains L - c, and pairs with c >= L are never taken.
//
// Tracking matrices are sparse: a track overlaps one or two of a frame's detections. The solver
// splits the graph of positive edges into its connected components and solves each exactly with
// the Hungarian algorithm (shortest augmenting paths with potentials, O(k^3) for a component of
// k rows and columns); a frame of 100 objects is then ~100 problems of size 1 or 2, microseconds in
// all, where one dense 100x100 Hungarian takes ~100 times longer (bench/track_bench.cpp measures
// it against dlib's max_cost_assignment). The result is exact for any matrix.
#pragma once

#include <span>
#include <utility>
#include <vector>

namespace sd::track {

struct Assignment {
  std::vector<std::pair<int, int>> matches;  // (row, column), rows ascending
  std::vector<int> unmatched_rows;           // ascending
  std::vector<int> unmatched_cols;           // ascending
};

// weights: rows x cols, row-major; entries <= 0 (or NaN) are not edges.
Assignment max_weight_matching(std::span<const double> weights, int rows, int cols);

// costs: rows x cols, row-major; pairs with cost >= cost_limit (or NaN) are never matched. The
// minimum of (sum of matched costs) + cost_limit / 2 * (rows and columns left unmatched).
Assignment min_cost_assignment(std::span<const double> costs, int rows, int cols, double cost_limit);

// The dense Hungarian algorithm on its own (rows <= cols): each row's column minimising the total
// cost of a complete assignment of the rows. Exposed for the tests and the benchmark.
std::vector<int> hungarian_min_cost(std::span<const double> costs, int rows, int cols);

}  // namespace sd::track
