// Default boxes (priors) of SSD300 trained on COCO, the boxes the raw regression outputs of
// NVIDIA DeepLearningExamples' SSD300 (and ssd.pytorch-style COCO models) are offsets against.
// Six feature maps 38, 19, 10, 5, 3, 1 with steps 8, 16, 32, 64, 100, 300, scales
// 21, 45, 99, 153, 207, 261, 315 (pixels of the 300x300 input), aspect ratios {2}, {2,3}, {2,3},
// {2,3}, {2}, {2}: per cell the boxes s_k, sqrt(s_k * s_k+1), then (s_k*sqrt(r), s_k/sqrt(r)) and
// its transpose per ratio: 4 or 6 per cell, 8732 in all, as cx, cy, w, h normalised to [0, 1]
// and clamped to it.
#pragma once

#include <vector>

namespace sd {

enum class SsdPriorOrder {
  kSizeMajor,      // per feature map: for each box size, every cell (NVIDIA DeepLearningExamples)
  kPositionMajor,  // per feature map: for each cell, every box size (ssd.pytorch PriorBox)
};

inline constexpr int kSsd300Priors = 8732;

// 4 * 8732 floats: cx, cy, w, h of each prior.
std::vector<float> ssd300_coco_priors(SsdPriorOrder order);

}  // namespace sd
