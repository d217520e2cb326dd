#include "postprocess/ssd_priors.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace sd {

std::vector<float> ssd300_coco_priors(SsdPriorOrder order) {
  constexpr double kFig = 300.0;
  const int feature[] = {38, 19, 10, 5, 3, 1};
  const double steps[] = {8, 16, 32, 64, 100, 300};
  const double scales[] = {21, 45, 99, 153, 207, 261, 315};
  const std::vector<std::vector<double>> ratios = {{2}, {2, 3}, {2, 3}, {2, 3}, {2}, {2}};

  std::vector<float> priors;
  priors.reserve(4 * kSsd300Priors);
  auto push = [&](double cx, double cy, double w, double h) {
    for (double v : {cx, cy, w, h}) priors.push_back(static_cast<float>(std::clamp(v, 0.0, 1.0)));
  };
  for (int k = 0; k < 6; ++k) {
    const double fk = kFig / steps[k];
    const double s1 = scales[k] / kFig, s2 = scales[k + 1] / kFig, s3 = std::sqrt(s1 * s2);
    std::vector<std::pair<double, double>> sizes = {{s1, s1}, {s3, s3}};
    for (double r : ratios[static_cast<size_t>(k)]) {
      sizes.emplace_back(s1 * std::sqrt(r), s1 / std::sqrt(r));
      sizes.emplace_back(s1 / std::sqrt(r), s1 * std::sqrt(r));
    }
    const int f = feature[k];
    if (order == SsdPriorOrder::kSizeMajor) {
      for (auto [w, h] : sizes)
        for (int i = 0; i < f; ++i)
          for (int j = 0; j < f; ++j) push((j + 0.5) / fk, (i + 0.5) / fk, w, h);
    } else {
      for (int i = 0; i < f; ++i)
        for (int j = 0; j < f; ++j)
          for (auto [w, h] : sizes) push((j + 0.5) / fk, (i + 0.5) / fk, w, h);
    }
  }
  return priors;
}

}  // namespace sd
