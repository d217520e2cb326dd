#include "eval/hota.h"

#include <algorithm>
#include <cmath>

#include "track/assignment.h"

namespace sd::eval {

namespace {

constexpr int kAlphas = 19;  // 0.05 to 0.95
constexpr double kEps = 1e-10;  // TrackEval's np.finfo('float').eps is smaller; a comparison guard either way

double alpha_at(int a) { return 0.05 * (a + 1); }

}  // namespace

int HotaAccumulator::index_of(std::unordered_map<int64_t, int>& index, int64_t id) {
  return index.try_emplace(id, static_cast<int>(index.size())).first->second;
}

void HotaAccumulator::add_frame(const std::vector<int64_t>& truth_ids, const std::vector<Detection>& truth_boxes,
                                const std::vector<int64_t>& hyp_ids, const std::vector<Detection>& hyp_boxes) {
  Frame f;
  for (int64_t id : truth_ids) f.truth.push_back(index_of(truth_index_, id));
  for (int64_t id : hyp_ids) f.hyp.push_back(index_of(hyp_index_, id));
  f.similarity.resize(truth_boxes.size() * hyp_boxes.size());
  for (size_t i = 0; i < truth_boxes.size(); ++i)
    for (size_t j = 0; j < hyp_boxes.size(); ++j)
      f.similarity[i * hyp_boxes.size() + j] =
          (!class_aware_ || truth_boxes[i].class_id == hyp_boxes[j].class_id) ? iou(truth_boxes[i], hyp_boxes[j]) : 0.0;
  frames_.push_back(std::move(f));
}

HotaMetrics HotaAccumulator::summary() const {
  const size_t ng = truth_index_.size(), nt = hyp_index_.size();
  // First pass: how much each pair of identities overlaps over their lives (the global alignment).
  std::vector<double> potential(ng * nt, 0.0), gt_count(ng, 0.0), tr_count(nt, 0.0);
  for (const Frame& f : frames_) {
    const size_t rows = f.truth.size(), cols = f.hyp.size();
    std::vector<double> row_sum(rows, 0.0), col_sum(cols, 0.0);
    for (size_t i = 0; i < rows; ++i)
      for (size_t j = 0; j < cols; ++j) {
        row_sum[i] += f.similarity[i * cols + j];
        col_sum[j] += f.similarity[i * cols + j];
      }
    for (size_t i = 0; i < rows; ++i)
      for (size_t j = 0; j < cols; ++j) {
        const double s = f.similarity[i * cols + j];
        const double denom = row_sum[i] + col_sum[j] - s;
        if (denom > kEps) potential[static_cast<size_t>(f.truth[i]) * nt + static_cast<size_t>(f.hyp[j])] += s / denom;
      }
    for (int g : f.truth) gt_count[static_cast<size_t>(g)] += 1;
    for (int t : f.hyp) tr_count[static_cast<size_t>(t)] += 1;
  }
  std::vector<double> alignment(ng * nt, 0.0);
  for (size_t g = 0; g < ng; ++g)
    for (size_t t = 0; t < nt; ++t) {
      const double p = potential[g * nt + t];
      alignment[g * nt + t] = p / (gt_count[g] + tr_count[t] - p);
    }

  // Second pass: per frame, the assignment maximising alignment x IoU; per alpha, the pairs at
  // IoU >= alpha are true positives.
  std::vector<double> tp(kAlphas, 0), fn(kAlphas, 0), fp(kAlphas, 0), loc(kAlphas, 0);
  std::vector<std::vector<double>> matches(kAlphas, std::vector<double>(ng * nt, 0.0));
  for (const Frame& f : frames_) {
    const size_t rows = f.truth.size(), cols = f.hyp.size();
    if (rows == 0 || cols == 0) {
      for (int a = 0; a < kAlphas; ++a) {
        fn[static_cast<size_t>(a)] += static_cast<double>(rows);
        fp[static_cast<size_t>(a)] += static_cast<double>(cols);
      }
      continue;
    }
    std::vector<double> score(rows * cols);
    for (size_t i = 0; i < rows; ++i)
      for (size_t j = 0; j < cols; ++j)
        score[i * cols + j] = alignment[static_cast<size_t>(f.truth[i]) * nt + static_cast<size_t>(f.hyp[j])] * f.similarity[i * cols + j];
    const track::Assignment pairs = track::max_weight_matching(score, static_cast<int>(rows), static_cast<int>(cols));
    for (int a = 0; a < kAlphas; ++a) {
      double n = 0;
      for (const auto& [i, j] : pairs.matches) {
        const double s = f.similarity[static_cast<size_t>(i) * cols + static_cast<size_t>(j)];
        if (s < alpha_at(a) - kEps) continue;
        n += 1;
        loc[static_cast<size_t>(a)] += s;
        matches[static_cast<size_t>(a)][static_cast<size_t>(f.truth[static_cast<size_t>(i)]) * nt + static_cast<size_t>(f.hyp[static_cast<size_t>(j)])] += 1;
      }
      tp[static_cast<size_t>(a)] += n;
      fn[static_cast<size_t>(a)] += static_cast<double>(rows) - n;
      fp[static_cast<size_t>(a)] += static_cast<double>(cols) - n;
    }
  }

  HotaMetrics m;
  for (int a = 0; a < kAlphas; ++a) {
    const size_t k = static_cast<size_t>(a);
    double assa = 0, assre = 0, asspr = 0;
    for (size_t g = 0; g < ng; ++g)
      for (size_t t = 0; t < nt; ++t) {
        const double c = matches[k][g * nt + t];
        if (c == 0) continue;
        assa += c * c / std::max(1.0, gt_count[g] + tr_count[t] - c);
        assre += c * c / std::max(1.0, gt_count[g]);
        asspr += c * c / std::max(1.0, tr_count[t]);
      }
    const double tps = std::max(1.0, tp[k]);
    const double deta = tp[k] / std::max(1.0, tp[k] + fn[k] + fp[k]);
    const double ass = assa / tps;
    m.deta += deta / kAlphas;
    m.assa += ass / kAlphas;
    m.hota += std::sqrt(deta * ass) / kAlphas;
    m.detre += tp[k] / std::max(1.0, tp[k] + fn[k]) / kAlphas;
    m.detpr += tp[k] / std::max(1.0, tp[k] + fp[k]) / kAlphas;
    m.assre += assre / tps / kAlphas;
    m.asspr += asspr / tps / kAlphas;
    m.loca += std::max(kEps, loc[k]) / std::max(kEps, tp[k]) / kAlphas;
  }
  return m;
}

}  // namespace sd::eval
