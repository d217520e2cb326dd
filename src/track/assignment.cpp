#include "track/assignment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace sd::track {

std::vector<int> hungarian_min_cost(std::span<const double> costs, int rows, int cols) {
  // Shortest augmenting paths with row and column potentials (Kuhn-Munkres as Jonker and Volgenant
  // formulate it), 1-based with a virtual column 0 holding the row being inserted.
  const int n = rows, m = cols;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> u(static_cast<size_t>(n) + 1, 0), v(static_cast<size_t>(m) + 1, 0), minv(static_cast<size_t>(m) + 1);
  std::vector<int> p(static_cast<size_t>(m) + 1, 0), way(static_cast<size_t>(m) + 1, 0);
  std::vector<char> used(static_cast<size_t>(m) + 1);
  for (int i = 1; i <= n; ++i) {
    p[0] = i;
    int j0 = 0;
    std::fill(minv.begin(), minv.end(), inf);
    std::fill(used.begin(), used.end(), 0);
    do {
      used[static_cast<size_t>(j0)] = 1;
      const int i0 = p[static_cast<size_t>(j0)];
      double delta = inf;
      int j1 = 0;
      const double* row = costs.data() + static_cast<size_t>(i0 - 1) * static_cast<size_t>(m);
      for (int j = 1; j <= m; ++j) {
        if (used[static_cast<size_t>(j)]) continue;
        const double cur = row[j - 1] - u[static_cast<size_t>(i0)] - v[static_cast<size_t>(j)];
        if (cur < minv[static_cast<size_t>(j)]) {
          minv[static_cast<size_t>(j)] = cur;
          way[static_cast<size_t>(j)] = j0;
        }
        if (minv[static_cast<size_t>(j)] < delta) {
          delta = minv[static_cast<size_t>(j)];
          j1 = j;
        }
      }
      for (int j = 0; j <= m; ++j) {
        if (used[static_cast<size_t>(j)]) {
          u[static_cast<size_t>(p[static_cast<size_t>(j)])] += delta;
          v[static_cast<size_t>(j)] -= delta;
        } else {
          minv[static_cast<size_t>(j)] -= delta;
        }
      }
      j0 = j1;
    } while (p[static_cast<size_t>(j0)] != 0);
    do {
      const int j1 = way[static_cast<size_t>(j0)];
      p[static_cast<size_t>(j0)] = p[static_cast<size_t>(j1)];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int> col_of_row(static_cast<size_t>(n), -1);
  for (int j = 1; j <= m; ++j)
    if (p[static_cast<size_t>(j)] != 0) col_of_row[static_cast<size_t>(p[static_cast<size_t>(j)] - 1)] = j - 1;
  return col_of_row;
}

namespace {

bool is_edge(double w) { return w > 0; }  // false for NaN too

struct DisjointSets {
  std::vector<int> parent;
  explicit DisjointSets(int n) : parent(static_cast<size_t>(n)) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[static_cast<size_t>(x)] != x) {
      parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
      x = parent[static_cast<size_t>(x)];
    }
    return x;
  }
  void join(int a, int b) { parent[static_cast<size_t>(find(a))] = find(b); }
};

// A component of at most 3 rows and 3 columns: every matching tried (at most 34), no allocation.
// Most of a tracking frame's components are this small (a track and its detection, a pair of
// tracks crossing); the Hungarian's set-up costs more than the search here.
void solve_small_component(std::span<const double> weights, int cols, const int* comp_rows, int nr,
                           const int* comp_cols, int nc, std::vector<std::pair<int, int>>& matches) {
  double w[3][3];
  for (int i = 0; i < nr; ++i)
    for (int j = 0; j < nc; ++j) {
      const double x = weights[static_cast<size_t>(comp_rows[i]) * static_cast<size_t>(cols) + static_cast<size_t>(comp_cols[j])];
      w[i][j] = is_edge(x) ? x : 0.0;
    }
  int best_pick[3] = {-1, -1, -1}, pick[3] = {-1, -1, -1};
  double best = 0;
  // Row i takes column pick[i] (or none, -1); columns used at most once.
  auto search = [&](auto&& self, int i, unsigned used, double total) -> void {
    if (i == nr) {
      if (total > best) {
        best = total;
        std::copy(pick, pick + 3, best_pick);
      }
      return;
    }
    pick[i] = -1;
    self(self, i + 1, used, total);
    for (int j = 0; j < nc; ++j) {
      if ((used >> j) & 1u || !(w[i][j] > 0)) continue;
      pick[i] = j;
      self(self, i + 1, used | (1u << j), total + w[i][j]);
    }
    pick[i] = -1;
  };
  search(search, 0, 0u, 0.0);
  for (int i = 0; i < nr; ++i)
    if (best_pick[i] >= 0) matches.emplace_back(comp_rows[i], comp_cols[best_pick[i]]);
}

// One connected component, solved exactly by the dense Hungarian algorithm on its own rows and
// columns (the smaller side as rows): a non-edge costs 0, an edge -w, so the cheapest complete
// assignment of the smaller side is the heaviest matching, its non-edge pairs left unmatched.
void solve_component(std::span<const double> weights, int cols, const std::vector<int>& comp_rows,
                     const std::vector<int>& comp_cols, std::vector<std::pair<int, int>>& matches) {
  const bool transpose = comp_rows.size() > comp_cols.size();
  const std::vector<int>& a = transpose ? comp_cols : comp_rows;  // the Hungarian's rows
  const std::vector<int>& b = transpose ? comp_rows : comp_cols;
  const int n = static_cast<int>(a.size()), m = static_cast<int>(b.size());
  std::vector<double> cost(static_cast<size_t>(n) * static_cast<size_t>(m));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) {
      const int r = transpose ? b[static_cast<size_t>(j)] : a[static_cast<size_t>(i)];
      const int c = transpose ? a[static_cast<size_t>(i)] : b[static_cast<size_t>(j)];
      const double w = weights[static_cast<size_t>(r) * static_cast<size_t>(cols) + static_cast<size_t>(c)];
      cost[static_cast<size_t>(i) * static_cast<size_t>(m) + static_cast<size_t>(j)] = is_edge(w) ? -w : 0.0;
    }
  const std::vector<int> pick = hungarian_min_cost(cost, n, m);
  for (int i = 0; i < n; ++i) {
    const int j = pick[static_cast<size_t>(i)];
    if (j < 0 || !(cost[static_cast<size_t>(i) * static_cast<size_t>(m) + static_cast<size_t>(j)] < 0)) continue;
    const int r = transpose ? b[static_cast<size_t>(j)] : a[static_cast<size_t>(i)];
    const int c = transpose ? a[static_cast<size_t>(i)] : b[static_cast<size_t>(j)];
    matches.emplace_back(r, c);
  }
}

}  // namespace

Assignment max_weight_matching(std::span<const double> weights, int rows, int cols) {
  Assignment out;
  if (rows <= 0 || cols <= 0) {
    for (int r = 0; r < rows; ++r) out.unmatched_rows.push_back(r);
    for (int c = 0; c < cols; ++c) out.unmatched_cols.push_back(c);
    return out;
  }
  // Rows are nodes 0..rows-1, columns rows..rows+cols-1; one pass over the matrix joins the ends
  // of every edge.
  const int nodes = rows + cols;
  DisjointSets sets(nodes);
  std::vector<char> has_edge(static_cast<size_t>(nodes), 0);
  for (int r = 0; r < rows; ++r) {
    const double* row = weights.data() + static_cast<size_t>(r) * static_cast<size_t>(cols);
    for (int c = 0; c < cols; ++c)
      if (is_edge(row[c])) {
        sets.join(r, rows + c);
        has_edge[static_cast<size_t>(r)] = has_edge[static_cast<size_t>(rows + c)] = 1;
      }
  }
  // Components numbered in order of first appearance; their nodes bucketed into one flat array.
  std::vector<int> comp_of_root(static_cast<size_t>(nodes), -1), comp_of(static_cast<size_t>(nodes), -1);
  std::vector<int> rows_in(1, 0), cols_in(1, 0);  // per component, grown as they appear
  int comps = 0;
  for (int v = 0; v < nodes; ++v) {
    if (!has_edge[static_cast<size_t>(v)]) continue;
    int& k = comp_of_root[static_cast<size_t>(sets.find(v))];
    if (k < 0) {
      k = comps++;
      rows_in.resize(static_cast<size_t>(comps), 0);
      cols_in.resize(static_cast<size_t>(comps), 0);
    }
    comp_of[static_cast<size_t>(v)] = k;
    ++(v < rows ? rows_in : cols_in)[static_cast<size_t>(k)];
  }
  std::vector<int> start(static_cast<size_t>(comps) + 1, 0);
  for (int k = 0; k < comps; ++k)
    start[static_cast<size_t>(k) + 1] = start[static_cast<size_t>(k)] + rows_in[static_cast<size_t>(k)] + cols_in[static_cast<size_t>(k)];
  std::vector<int> fill(start.begin(), start.end() - 1), members(static_cast<size_t>(start.back()));
  for (int v = 0; v < nodes; ++v)  // rows first, then columns, each ascending within a component
    if (comp_of[static_cast<size_t>(v)] >= 0) members[static_cast<size_t>(fill[static_cast<size_t>(comp_of[static_cast<size_t>(v)])]++)] = v;

  std::vector<int> comp_rows, comp_cols;
  for (int k = 0; k < comps; ++k) {
    const int* m = members.data() + start[static_cast<size_t>(k)];
    const int nr = rows_in[static_cast<size_t>(k)], nc = cols_in[static_cast<size_t>(k)];
    if (nr == 1 && nc == 1) {
      out.matches.emplace_back(m[0], m[1] - rows);  // one edge: nothing to choose
      continue;
    }
    comp_rows.assign(m, m + nr);
    comp_cols.resize(static_cast<size_t>(nc));
    for (int j = 0; j < nc; ++j) comp_cols[static_cast<size_t>(j)] = m[nr + j] - rows;
    if (nr <= 3 && nc <= 3)
      solve_small_component(weights, cols, comp_rows.data(), nr, comp_cols.data(), nc, out.matches);
    else
      solve_component(weights, cols, comp_rows, comp_cols, out.matches);
  }
  std::sort(out.matches.begin(), out.matches.end());
  std::vector<char> row_taken(static_cast<size_t>(rows), 0), col_taken(static_cast<size_t>(cols), 0);
  for (const auto& [r, c] : out.matches) {
    row_taken[static_cast<size_t>(r)] = 1;
    col_taken[static_cast<size_t>(c)] = 1;
  }
  for (int r = 0; r < rows; ++r)
    if (!row_taken[static_cast<size_t>(r)]) out.unmatched_rows.push_back(r);
  for (int c = 0; c < cols; ++c)
    if (!col_taken[static_cast<size_t>(c)]) out.unmatched_cols.push_back(c);
  return out;
}

Assignment min_cost_assignment(std::span<const double> costs, int rows, int cols, double cost_limit) {
  std::vector<double> gain(costs.size());
  for (size_t i = 0; i < costs.size(); ++i) {
    const double c = costs[i];
    gain[i] = (c < cost_limit) ? cost_limit - c : 0.0;  // NaN and c >= limit: no edge
  }
  return max_weight_matching(gain, rows, cols);
}

}  // namespace sd::track
