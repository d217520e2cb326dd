#include "eval/coco_eval.h"

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <numeric>
#include <unordered_map>

namespace sd::eval {

const std::array<const char*, kCocoStats> kCocoStatNames = {"AP",   "AP50", "AP75", "APs",  "APm",  "APl",
                                                            "AR1",  "AR10", "AR100", "ARs", "ARm",  "ARl"};

namespace {

constexpr int kIouThresholds = 10;
constexpr int kRecallPoints = 101;
constexpr int kAreas = 4;  // all, small, medium, large
constexpr std::array<int, 3> kMaxDets = {1, 10, 100};
constexpr std::array<std::array<double, 2>, kAreas> kAreaRanges = {{{0, 1e10}, {0, 32.0 * 32}, {32.0 * 32, 96.0 * 96}, {96.0 * 96, 1e10}}};

// numpy.linspace(start, stop, num): start + i * ((stop - start) / (num - 1)), the last one `stop`
// exactly. COCOeval's thresholds are these doubles; 0.05 * i would round differently.
template <int N>
std::array<double, N> linspace(double start, double stop) {
  std::array<double, N> v{};
  const double step = (stop - start) / (N - 1);
  for (int i = 0; i < N; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i) * step + start;
  v[N - 1] = stop;
  return v;
}

const std::array<double, kIouThresholds> kIouThr = linspace<kIouThresholds>(0.5, 0.95);
const std::array<double, kRecallPoints> kRecThr = linspace<kRecallPoints>(0.0, 1.0);

// What COCOeval.evaluateImg keeps of one image, category and area range: its detections' scores
// (best first, at most 100), whether each is matched / ignored at each IoU threshold, and how many
// ground-truth boxes count.
struct ImageEval {
  std::vector<double> scores;
  std::vector<uint8_t> matched;  // [threshold][detection]
  std::vector<uint8_t> ignored;  // [threshold][detection]
  int64_t counted_truth = 0;
};

// Sums of the entries > -1, as COCOeval.summarize averages them.
struct Mean {
  double sum = 0;
  int64_t n = 0;
  void add(double v) {
    if (v > -1) {
      sum += v;
      ++n;
    }
  }
  double value() const { return n == 0 ? -1.0 : sum / static_cast<double>(n); }
};

// One category on one image: the detections sorted and cut, their IoUs with the truth, then the
// greedy matching of COCOeval.evaluateImg for each area range.
void evaluate_image(const std::vector<const CocoTruth*>& truth, std::vector<const CocoResult*> dets,
                    std::array<ImageEval, kAreas>& out) {
  std::stable_sort(dets.begin(), dets.end(), [](const CocoResult* a, const CocoResult* b) { return a->score > b->score; });
  if (dets.size() > static_cast<size_t>(kMaxDets.back())) dets.resize(static_cast<size_t>(kMaxDets.back()));
  const size_t G = truth.size(), D = dets.size();
  std::vector<double> ious(D * G);
  for (size_t d = 0; d < D; ++d)
    for (size_t g = 0; g < G; ++g) ious[d * G + g] = coco_box_iou(dets[d]->box, truth[g]->box, truth[g]->crowd);

  for (int a = 0; a < kAreas; ++a) {
    const auto [lo, hi] = kAreaRanges[static_cast<size_t>(a)];
    std::vector<uint8_t> ignore(G);
    for (size_t g = 0; g < G; ++g) ignore[g] = truth[g]->crowd || truth[g]->area < lo || truth[g]->area > hi;
    // Counted truth first, ignored after (stable), as COCOeval orders it before matching.
    std::vector<size_t> order(G);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return ignore[x] < ignore[y]; });

    ImageEval& e = out[static_cast<size_t>(a)];
    e.scores.resize(D);
    for (size_t d = 0; d < D; ++d) e.scores[d] = dets[d]->score;
    e.matched.assign(kIouThresholds * D, 0);
    e.ignored.assign(kIouThresholds * D, 0);
    e.counted_truth = std::count(ignore.begin(), ignore.end(), uint8_t{0});
    std::vector<uint8_t> truth_taken(G);
    for (int t = 0; t < kIouThresholds; ++t) {
      std::fill(truth_taken.begin(), truth_taken.end(), uint8_t{0});
      for (size_t d = 0; d < D; ++d) {
        double best = std::min(kIouThr[static_cast<size_t>(t)], 1 - 1e-10);
        long m = -1;
        for (size_t k = 0; k < G; ++k) {
          const size_t g = order[k];
          if (truth_taken[g] && !truth[g]->crowd) continue;  // taken, and not a crowd
          // Matched a counted box already, and only ignored ones remain.
          if (m > -1 && !ignore[static_cast<size_t>(m)] && ignore[g]) break;
          if (ious[d * G + g] < best) continue;
          best = ious[d * G + g];
          m = static_cast<long>(g);
        }
        if (m == -1) continue;
        e.ignored[static_cast<size_t>(t) * D + d] = ignore[static_cast<size_t>(m)];
        e.matched[static_cast<size_t>(t) * D + d] = 1;
        truth_taken[static_cast<size_t>(m)] = 1;
      }
    }
    // An unmatched detection outside the area range is not counted against it.
    for (size_t d = 0; d < D; ++d) {
      const double area = dets[d]->box.w * dets[d]->box.h;
      if (area >= lo && area <= hi) continue;
      for (int t = 0; t < kIouThresholds; ++t)
        if (!e.matched[static_cast<size_t>(t) * D + d]) e.ignored[static_cast<size_t>(t) * D + d] = 1;
    }
  }
}

// COCOeval.accumulate for one category, area range and maxDets: precision at the recall points
// (-1 when the category has no counted truth) and the final recall at each threshold.
void accumulate(const std::vector<const ImageEval*>& images, int max_det,
                std::array<std::array<double, kRecallPoints>, kIouThresholds>& precision,
                std::array<double, kIouThresholds>& recall) {
  for (auto& p : precision) p.fill(-1);
  recall.fill(-1);
  int64_t counted = 0;
  struct Ref {
    double score;
    const ImageEval* image;
    size_t index;  // in image->scores
  };
  std::vector<Ref> refs;
  for (const ImageEval* e : images) {
    counted += e->counted_truth;
    const size_t n = std::min(e->scores.size(), static_cast<size_t>(max_det));
    for (size_t d = 0; d < n; ++d) refs.push_back({e->scores[d], e, d});
  }
  if (counted == 0) return;
  std::stable_sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) { return a.score > b.score; });
  std::vector<double> rc, pr;
  for (int t = 0; t < kIouThresholds; ++t) {
    rc.clear();
    pr.clear();
    double tp = 0, fp = 0;
    for (const Ref& r : refs) {
      const size_t D = r.image->scores.size();
      const size_t at = static_cast<size_t>(t) * D + r.index;
      if (r.image->ignored[at]) {
        // Ignored detections add nothing, yet keep their place in the cumulative sums.
      } else if (r.image->matched[at]) {
        tp += 1;
      } else {
        fp += 1;
      }
      rc.push_back(tp / static_cast<double>(counted));
      pr.push_back(tp / (fp + tp + DBL_EPSILON));
    }
    const size_t nd = rc.size();
    recall[static_cast<size_t>(t)] = nd ? rc.back() : 0;
    for (size_t i = nd; i-- > 1;)
      if (pr[i] > pr[i - 1]) pr[i - 1] = pr[i];
    auto& q = precision[static_cast<size_t>(t)];
    q.fill(0);
    for (int ri = 0; ri < kRecallPoints; ++ri) {
      const size_t pi = static_cast<size_t>(std::lower_bound(rc.begin(), rc.end(), kRecThr[static_cast<size_t>(ri)]) - rc.begin());
      if (pi >= nd) break;
      q[static_cast<size_t>(ri)] = pr[pi];
    }
  }
}

}  // namespace

double coco_box_iou(const CocoBox& det, const CocoBox& truth, bool crowd) {
  const double w = std::min(det.x + det.w, truth.x + truth.w) - std::max(det.x, truth.x);
  if (w <= 0) return 0;
  const double h = std::min(det.y + det.h, truth.y + truth.h) - std::max(det.y, truth.y);
  if (h <= 0) return 0;
  const double inter = w * h;
  const double det_area = det.w * det.h;
  const double uni = crowd ? det_area : det_area + truth.w * truth.h - inter;
  return inter / uni;
}

CocoMetrics evaluate_coco(const std::vector<int64_t>& image_ids, const std::vector<int64_t>& category_ids,
                          const std::vector<CocoTruth>& truth, const std::vector<CocoResult>& results) {
  // COCOeval walks images in ascending id order; with equal scores that order decides ties.
  std::vector<int64_t> images = image_ids;
  std::sort(images.begin(), images.end());
  images.erase(std::unique(images.begin(), images.end()), images.end());
  std::unordered_map<int64_t, size_t> image_index, category_index;
  for (size_t i = 0; i < images.size(); ++i) image_index.emplace(images[i], i);
  for (size_t k = 0; k < category_ids.size(); ++k) category_index.emplace(category_ids[k], k);

  // Per category, per image: the truth and the results, each in its given order.
  struct Cell {
    std::vector<const CocoTruth*> truth;
    std::vector<const CocoResult*> dets;
  };
  std::vector<std::unordered_map<size_t, Cell>> cells(category_ids.size());
  for (const CocoTruth& t : truth) {
    auto i = image_index.find(t.image_id);
    auto k = category_index.find(t.category_id);
    if (i != image_index.end() && k != category_index.end()) cells[k->second][i->second].truth.push_back(&t);
  }
  for (const CocoResult& r : results) {
    auto i = image_index.find(r.image_id);
    auto k = category_index.find(r.category_id);
    if (i != image_index.end() && k != category_index.end()) cells[k->second][i->second].dets.push_back(&r);
  }

  CocoMetrics m;
  m.category_ap.assign(category_ids.size(), -1);
  m.category_ap50.assign(category_ids.size(), -1);
  // [area][maxDets]: the averages summarize() takes, over IoU thresholds, recall points, categories.
  Mean ap[kAreas][kMaxDets.size()], ap50[kAreas][kMaxDets.size()], ap75[kAreas][kMaxDets.size()];
  Mean ar[kAreas][kMaxDets.size()];
  std::array<std::array<double, kRecallPoints>, kIouThresholds> precision;
  std::array<double, kIouThresholds> recall;
  for (size_t k = 0; k < category_ids.size(); ++k) {
    std::vector<std::pair<size_t, const Cell*>> sorted;
    for (const auto& [image, cell] : cells[k]) sorted.emplace_back(image, &cell);
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::array<ImageEval, kAreas>> evals(sorted.size());
    for (size_t i = 0; i < sorted.size(); ++i) evaluate_image(sorted[i].second->truth, sorted[i].second->dets, evals[i]);
    for (int a = 0; a < kAreas; ++a) {
      std::vector<const ImageEval*> area_evals;
      for (const auto& e : evals) area_evals.push_back(&e[static_cast<size_t>(a)]);
      for (size_t md = 0; md < kMaxDets.size(); ++md) {
        accumulate(area_evals, kMaxDets[md], precision, recall);
        Mean category;
        for (int t = 0; t < kIouThresholds; ++t) {
          for (double p : precision[static_cast<size_t>(t)]) {
            ap[a][md].add(p);
            if (t == 0) ap50[a][md].add(p);
            if (t == 5) ap75[a][md].add(p);
            category.add(p);
          }
          ar[a][md].add(recall[static_cast<size_t>(t)]);
        }
        if (a == 0 && md == kMaxDets.size() - 1) {
          m.category_ap[k] = category.value();
          Mean c50;
          for (double p : precision[0]) c50.add(p);
          m.category_ap50[k] = c50.value();
        }
      }
    }
  }
  const size_t last = kMaxDets.size() - 1;
  m.stats = {ap[0][last].value(), ap50[0][last].value(), ap75[0][last].value(), ap[1][last].value(),
             ap[2][last].value(),  ap[3][last].value(),   ar[0][0].value(),      ar[0][1].value(),
             ar[0][last].value(),  ar[1][last].value(),   ar[2][last].value(),   ar[3][last].value()};
  return m;
}

std::string format_coco_summary(const CocoMetrics& metrics) {
  struct Line {
    bool ap;
    const char* iou;
    const char* area;
    int max_det;
  };
  static const Line kLines[kCocoStats] = {
      {true, "0.50:0.95", "all", 100},    {true, "0.50", "all", 100},         {true, "0.75", "all", 100},
      {true, "0.50:0.95", "small", 100},  {true, "0.50:0.95", "medium", 100}, {true, "0.50:0.95", "large", 100},
      {false, "0.50:0.95", "all", 1},     {false, "0.50:0.95", "all", 10},    {false, "0.50:0.95", "all", 100},
      {false, "0.50:0.95", "small", 100}, {false, "0.50:0.95", "medium", 100}, {false, "0.50:0.95", "large", 100}};
  std::string text;
  char buf[160];
  for (int i = 0; i < kCocoStats; ++i) {
    const Line& l = kLines[i];
    std::snprintf(buf, sizeof buf, " %-18s %s @[ IoU=%-9s | area=%6s | maxDets=%3d ] = %0.3f\n",
                  l.ap ? "Average Precision" : "Average Recall", l.ap ? "(AP)" : "(AR)", l.iou, l.area, l.max_det,
                  metrics.stats[static_cast<size_t>(i)]);
    text += buf;
  }
  return text;
}

}  // namespace sd::eval
