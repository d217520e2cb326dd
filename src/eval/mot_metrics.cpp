#include "eval/mot_metrics.h"

#include <algorithm>
#include <set>

#include "track/assignment.h"

namespace sd::eval {

void MotAccumulator::add_frame(std::span<const MotObject> truth, std::span<const MotObject> hypotheses) {
  {
    std::vector<int64_t> tid, hid;
    std::vector<Detection> tbox, hbox;
    for (const auto& t : truth) tid.push_back(t.id), tbox.push_back(t.box);
    for (const auto& h : hypotheses) hid.push_back(h.id), hbox.push_back(h.box);
    hota_.add_frame(tid, tbox, hid, hbox);
  }
  ++counts_.frames;
  counts_.truth_boxes += static_cast<int64_t>(truth.size());
  counts_.hypothesis_boxes += static_cast<int64_t>(hypotheses.size());
  const size_t nt = truth.size(), nh = hypotheses.size();
  std::vector<double> overlap(nt * nh);
  for (size_t o = 0; o < nt; ++o)
    for (size_t h = 0; h < nh; ++h) {
      const bool comparable = !class_aware_ || truth[o].box.class_id == hypotheses[h].box.class_id;
      const double v = comparable ? iou(truth[o].box, hypotheses[h].box) : 0.0;
      overlap[o * nh + h] = v;
      if (v >= iou_threshold_) ++overlap_[{truth[o].id, hypotheses[h].id}];
    }
  for (const auto& t : truth) ++truth_count_[t.id];
  for (const auto& h : hypotheses) ++hypothesis_count_[h.id];

  std::vector<int> truth_match(nt, -1);
  std::vector<char> hyp_taken(nh, 0);
  // Last frame's correspondences that still hold are kept.
  for (size_t o = 0; o < nt; ++o) {
    auto last = last_match_.find(truth[o].id);
    if (last == last_match_.end()) continue;
    for (size_t h = 0; h < nh; ++h)
      if (!hyp_taken[h] && hypotheses[h].id == last->second && overlap[o * nh + h] >= iou_threshold_) {
        truth_match[o] = static_cast<int>(h);
        hyp_taken[h] = 1;
        break;
      }
  }
  // The rest: most matches first, then the least total distance. Every valid pair weighs more
  // than any sum of distances the matching could save, so the count of matches decides first.
  std::vector<size_t> free_truth, free_hyp;
  for (size_t o = 0; o < nt; ++o)
    if (truth_match[o] < 0) free_truth.push_back(o);
  for (size_t h = 0; h < nh; ++h)
    if (!hyp_taken[h]) free_hyp.push_back(h);
  const double big = 1.0 + static_cast<double>(std::min(free_truth.size(), free_hyp.size()));
  std::vector<double> weights(free_truth.size() * free_hyp.size(), 0.0);
  for (size_t i = 0; i < free_truth.size(); ++i)
    for (size_t j = 0; j < free_hyp.size(); ++j) {
      const double v = overlap[free_truth[i] * nh + free_hyp[j]];
      if (v >= iou_threshold_) weights[i * free_hyp.size() + j] = big - (1.0 - v);
    }
  const track::Assignment a =
      track::max_weight_matching(weights, static_cast<int>(free_truth.size()), static_cast<int>(free_hyp.size()));
  for (const auto& [i, j] : a.matches) {
    const size_t o = free_truth[static_cast<size_t>(i)], h = free_hyp[static_cast<size_t>(j)];
    truth_match[o] = static_cast<int>(h);
    hyp_taken[h] = 1;
    auto last = last_match_.find(truth[o].id);
    if (last != last_match_.end() && last->second != hypotheses[h].id) {
      ++counts_.id_switches;
      counts_.switches.push_back({counts_.frames - 1, truth[o].id, last->second, hypotheses[h].id});
    }
  }

  for (size_t o = 0; o < nt; ++o) {
    const bool matched = truth_match[o] >= 0;
    truth_history_[truth[o].id].matched.push_back(matched ? 1 : 0);
    if (!matched) {
      ++counts_.misses;
      continue;
    }
    ++counts_.matches;
    distance_sum_ += 1.0 - overlap[o * nh + static_cast<size_t>(truth_match[o])];
    last_match_[truth[o].id] = hypotheses[static_cast<size_t>(truth_match[o])].id;
  }
  for (size_t h = 0; h < nh; ++h) counts_.false_positives += hyp_taken[h] ? 0 : 1;
}

MotMetrics MotAccumulator::summary() const {
  MotMetrics m = counts_;
  m.mota = m.truth_boxes > 0 ? 1.0 - static_cast<double>(m.misses + m.false_positives + m.id_switches) /
                                         static_cast<double>(m.truth_boxes)
                             : 0.0;
  m.motp = m.matches > 0 ? distance_sum_ / static_cast<double>(m.matches) : 0.0;

  for (const auto& [id, history] : truth_history_) {
    ++m.truth_tracks;
    const auto& h = history.matched;
    const auto tracked = std::count(h.begin(), h.end(), 1);
    const double ratio = static_cast<double>(tracked) / static_cast<double>(h.size());
    if (ratio >= 0.8)
      ++m.mostly_tracked;
    else if (ratio < 0.2)
      ++m.mostly_lost;
    else
      ++m.partially_tracked;
    // Between the first and the last match, each fall from matched to missed is a fragmentation.
    auto first = std::find(h.begin(), h.end(), 1);
    if (first == h.end()) continue;
    auto last = std::find(h.rbegin(), h.rend(), 1).base();  // one past the last match
    for (auto it = first + 1; it < last; ++it)
      if (*it == 0 && *(it - 1) == 1) ++m.fragmentations;
  }

  // The global identity pairing: ids in index order, weights the frames each pair overlaps.
  std::map<int64_t, int> truth_index, hyp_index;
  for (const auto& [id, n] : truth_count_) truth_index.emplace(id, static_cast<int>(truth_index.size()));
  for (const auto& [id, n] : hypothesis_count_) hyp_index.emplace(id, static_cast<int>(hyp_index.size()));
  const size_t rows = truth_index.size(), cols = hyp_index.size();
  std::vector<double> weights(rows * cols, 0.0);
  for (const auto& [pair, frames] : overlap_)
    weights[static_cast<size_t>(truth_index[pair.first]) * cols + static_cast<size_t>(hyp_index[pair.second])] =
        static_cast<double>(frames);
  const track::Assignment a = track::max_weight_matching(weights, static_cast<int>(rows), static_cast<int>(cols));
  for (const auto& [r, c] : a.matches)
    m.idtp += static_cast<int64_t>(weights[static_cast<size_t>(r) * cols + static_cast<size_t>(c)]);
  m.idfn = m.truth_boxes - m.idtp;
  m.idfp = m.hypothesis_boxes - m.idtp;
  const int64_t both = m.truth_boxes + m.hypothesis_boxes;
  m.idf1 = both > 0 ? 2.0 * static_cast<double>(m.idtp) / static_cast<double>(both) : 0.0;
  m.idp = m.hypothesis_boxes > 0 ? static_cast<double>(m.idtp) / static_cast<double>(m.hypothesis_boxes) : 0.0;
  m.idr = m.truth_boxes > 0 ? static_cast<double>(m.idtp) / static_cast<double>(m.truth_boxes) : 0.0;
  m.hota = hota_.summary();
  return m;
}

}  // namespace sd::eval
