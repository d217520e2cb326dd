// COCO's metrics (eval/coco_eval.h) on constructed cases whose answers follow from pycocotools'
// definitions by hand: perfect detections, a shifted box, duplicates, crowd regions, images without
// truth, a category without truth, maxDets, area ranges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "eval/coco_eval.h"

namespace sd::eval {
namespace {

enum Stat { AP, AP50, AP75, APs, APm, APl, AR1, AR10, AR100, ARs, ARm, ARl };

CocoTruth gt(int64_t image, int64_t category, CocoBox b, bool crowd = false) {
  return {image, category, b, b.w * b.h, crowd};
}
CocoResult det(int64_t image, int64_t category, CocoBox b, double score) { return {image, category, b, score}; }

// 101 recall points; precision p0 up to recall r (inclusive), p1 beyond: what a precision curve
// with one step gives as AP.
double two_step_ap(double r, double p0, double p1) {
  int below = 0;
  for (int i = 0; i <= 100; ++i)
    if (i / 100.0 <= r + 1e-12) ++below;
  return (below * p0 + (101 - below) * p1) / 101.0;
}

TEST(CocoEval, PerfectDetectionsScoreOne) {
  // A small, a medium and a large box, in two images and two categories.
  std::vector<CocoTruth> truth = {gt(1, 1, {10, 10, 20, 20}), gt(1, 2, {50, 50, 50, 50}), gt(2, 1, {0, 0, 200, 150})};
  std::vector<CocoResult> results;
  for (const auto& t : truth) results.push_back(det(t.image_id, t.category_id, t.box, 0.9));
  const CocoMetrics m = evaluate_coco({1, 2}, {1, 2}, truth, results);
  for (int i = 0; i < kCocoStats; ++i) EXPECT_DOUBLE_EQ(m.stats[i], 1.0) << kCocoStatNames[i];
  EXPECT_DOUBLE_EQ(m.category_ap[0], 1.0);
  EXPECT_DOUBLE_EQ(m.category_ap[1], 1.0);
}

TEST(CocoEval, ShiftedBoxCountsAtTheThresholdsItsIouPasses) {
  // 100x100 box shifted 20 px: IoU 80*100 / (2*100*100 - 80*100) = 2/3, above 0.50..0.65 (4 of 10).
  EXPECT_NEAR(coco_box_iou({20, 0, 100, 100}, {0, 0, 100, 100}, false), 2.0 / 3.0, 1e-12);
  const CocoMetrics m = evaluate_coco({1}, {1}, {gt(1, 1, {0, 0, 100, 100})}, {det(1, 1, {20, 0, 100, 100}, 0.8)});
  EXPECT_NEAR(m.stats[AP], 0.4, 1e-12);
  EXPECT_DOUBLE_EQ(m.stats[AP50], 1.0);
  EXPECT_DOUBLE_EQ(m.stats[AP75], 0.0);
  EXPECT_NEAR(m.stats[AR100], 0.4, 1e-12);
  EXPECT_DOUBLE_EQ(m.stats[APs], -1.0);  // no small truth: nothing to average
  EXPECT_NEAR(m.stats[APl], 0.4, 1e-12);
}

TEST(CocoEval, DuplicateIsAFalsePositive) {
  // Truth A and B; detections A (0.9), A again (0.8), B (0.7): precision 1, 1/2, 2/3 at recall
  // 1/2, 1/2, 1, made monotone: 1 up to recall 0.5, 2/3 beyond.
  std::vector<CocoTruth> truth = {gt(1, 1, {0, 0, 50, 50}), gt(1, 1, {100, 100, 50, 50})};
  std::vector<CocoResult> results = {det(1, 1, {0, 0, 50, 50}, 0.9), det(1, 1, {0, 0, 50, 50}, 0.8),
                                     det(1, 1, {100, 100, 50, 50}, 0.7)};
  const CocoMetrics m = evaluate_coco({1}, {1}, truth, results);
  EXPECT_NEAR(m.stats[AP], two_step_ap(0.5, 1.0, 2.0 / 3.0), 1e-12);
  EXPECT_NEAR(m.stats[AP], (51 + 50 * 2.0 / 3.0) / 101, 1e-12);
  EXPECT_DOUBLE_EQ(m.stats[AR100], 1.0);
  // Without the duplicate: perfect.
  results.erase(results.begin() + 1);
  EXPECT_DOUBLE_EQ(evaluate_coco({1}, {1}, truth, results).stats[AP], 1.0);
}

TEST(CocoEval, CrowdRegionIsNeitherRewardedNorPenalised) {
  // A person, and a crowd region holding many: detections inside the region match it (IoU:
  // intersection / detection area = 1), any number of them, and count neither way; the region
  // missed is no miss.
  EXPECT_DOUBLE_EQ(coco_box_iou({210, 10, 20, 20}, {200, 0, 300, 200}, true), 1.0);
  EXPECT_LT(coco_box_iou({210, 10, 20, 20}, {200, 0, 300, 200}, false), 0.01);
  std::vector<CocoTruth> truth = {gt(1, 1, {0, 0, 50, 100}), gt(1, 1, {200, 0, 300, 200}, true)};
  // Both detections in the region rank above the person's.
  std::vector<CocoResult> results = {det(1, 1, {210, 10, 20, 40}, 0.95), det(1, 1, {0, 0, 50, 100}, 0.9),
                                     det(1, 1, {300, 50, 20, 40}, 0.92)};
  CocoMetrics m = evaluate_coco({1}, {1}, truth, results);
  EXPECT_DOUBLE_EQ(m.stats[AP], 1.0);
  EXPECT_DOUBLE_EQ(m.stats[AR100], 1.0);
  // The same region not marked crowd: the two detections in it are false positives ranked above
  // the person (precision 1/3 at recall 1/2) and the region itself is a miss.
  truth[1].crowd = false;
  m = evaluate_coco({1}, {1}, truth, results);
  EXPECT_DOUBLE_EQ(m.stats[AR100], 0.5);
  EXPECT_NEAR(m.stats[AP50], two_step_ap(0.5, 1.0 / 3.0, 0.0), 1e-12);
}

TEST(CocoEval, CountedTruthIsPreferredToAnIgnoredOne) {
  // A person inside a crowd region (listed first): a detection a little off the person has IoU 1
  // with the region and 0.8 with the person, and goes to the person.
  std::vector<CocoTruth> truth = {gt(1, 1, {0, 0, 400, 300}, true), gt(1, 1, {100, 100, 50, 100})};
  const CocoBox off{100, 100, 50, 80};
  EXPECT_DOUBLE_EQ(coco_box_iou(off, truth[0].box, true), 1.0);
  EXPECT_NEAR(coco_box_iou(off, truth[1].box, false), 0.8, 1e-12);
  const CocoMetrics m = evaluate_coco({1}, {1}, truth, {det(1, 1, off, 0.9)});
  EXPECT_DOUBLE_EQ(m.stats[AP50], 1.0);
  EXPECT_DOUBLE_EQ(m.stats[AP75], 1.0);
  EXPECT_DOUBLE_EQ(m.stats[AP], 0.7);  // 0.50 .. 0.80: 7 of 10 thresholds
}

TEST(CocoEval, ImagesWithoutTruth) {
  std::vector<CocoTruth> truth = {gt(1, 1, {0, 0, 60, 60})};
  // An image with nothing in it and nothing detected changes nothing.
  EXPECT_DOUBLE_EQ(evaluate_coco({1, 2, 3}, {1}, truth, {det(1, 1, {0, 0, 60, 60}, 0.9)}).stats[AP], 1.0);
  // A detection on an empty image scored below the true one: recall 1 is reached at precision 1.
  EXPECT_DOUBLE_EQ(
      evaluate_coco({1, 2}, {1}, truth, {det(1, 1, {0, 0, 60, 60}, 0.9), det(2, 1, {0, 0, 60, 60}, 0.5)}).stats[AP], 1.0);
  // Scored above it: precision 1/2 at recall 1.
  const CocoMetrics m =
      evaluate_coco({1, 2}, {1}, truth, {det(1, 1, {0, 0, 60, 60}, 0.9), det(2, 1, {0, 0, 60, 60}, 0.95)});
  EXPECT_NEAR(m.stats[AP], 0.5, 1e-12);
  // No truth at all: every figure -1, as pycocotools prints.
  const CocoMetrics none = evaluate_coco({1}, {1}, {}, {det(1, 1, {0, 0, 60, 60}, 0.9)});
  for (int i = 0; i < kCocoStats; ++i) EXPECT_DOUBLE_EQ(none.stats[i], -1.0) << kCocoStatNames[i];
}

TEST(CocoEval, CategoryWithoutTruthIsLeftOutOfTheMean) {
  // Category 7 has detections but no truth: its AP is -1 and the mean is category 3's alone.
  std::vector<CocoTruth> truth = {gt(1, 3, {0, 0, 60, 60})};
  std::vector<CocoResult> results = {det(1, 3, {0, 0, 60, 60}, 0.9), det(1, 7, {100, 0, 60, 60}, 0.99)};
  const CocoMetrics m = evaluate_coco({1}, {3, 7}, truth, results);
  EXPECT_DOUBLE_EQ(m.stats[AP], 1.0);
  EXPECT_DOUBLE_EQ(m.category_ap[0], 1.0);
  EXPECT_DOUBLE_EQ(m.category_ap[1], -1.0);
  // Results of a category the dataset does not have are not counted.
  const CocoMetrics only3 = evaluate_coco({1}, {3}, truth, {det(1, 9, {0, 0, 60, 60}, 0.99), det(1, 3, {0, 0, 60, 60}, 0.5)});
  EXPECT_DOUBLE_EQ(only3.stats[AP], 1.0);
}

TEST(CocoEval, MaxDetsCutsEachImage) {
  // Two objects found, one a lower score: AR@1 counts one of two.
  std::vector<CocoTruth> truth = {gt(1, 1, {0, 0, 60, 60}), gt(1, 1, {100, 0, 60, 60})};
  CocoMetrics m = evaluate_coco({1}, {1}, truth, {det(1, 1, {0, 0, 60, 60}, 0.9), det(1, 1, {100, 0, 60, 60}, 0.8)});
  EXPECT_DOUBLE_EQ(m.stats[AR1], 0.5);
  EXPECT_DOUBLE_EQ(m.stats[AR10], 1.0);
  EXPECT_DOUBLE_EQ(m.stats[AR100], 1.0);
  // 100 higher-scored false detections push the true one out of the 100 kept.
  std::vector<CocoResult> results;
  for (int i = 0; i < 100; ++i) results.push_back(det(1, 1, {500.0 + i, 500, 10, 10}, 0.9));
  results.push_back(det(1, 1, {0, 0, 60, 60}, 0.1));
  m = evaluate_coco({1}, {1}, {gt(1, 1, {0, 0, 60, 60})}, results);
  EXPECT_DOUBLE_EQ(m.stats[AR100], 0.0);
  EXPECT_DOUBLE_EQ(m.stats[AP], 0.0);
  results.erase(results.begin());  // 99 false ones: the true one is kept, last
  m = evaluate_coco({1}, {1}, {gt(1, 1, {0, 0, 60, 60})}, results);
  EXPECT_DOUBLE_EQ(m.stats[AR100], 1.0);
  EXPECT_NEAR(m.stats[AP], 0.01, 1e-12);  // precision 1/100 at every recall point
}

TEST(CocoEval, AreaRangesUseTheAnnotationsArea) {
  // A small object missed, a large one found.
  std::vector<CocoTruth> truth = {gt(1, 1, {0, 0, 10, 10}), gt(1, 1, {100, 100, 200, 200})};
  const CocoMetrics m = evaluate_coco({1}, {1}, truth, {det(1, 1, {100, 100, 200, 200}, 0.9)});
  EXPECT_NEAR(m.stats[AP], 51.0 / 101.0, 1e-12);  // precision 1 up to recall 0.5
  EXPECT_DOUBLE_EQ(m.stats[APs], 0.0);  // the large detection matched an ignored box: nothing counted
  EXPECT_DOUBLE_EQ(m.stats[APm], -1.0);
  EXPECT_DOUBLE_EQ(m.stats[APl], 1.0);
  EXPECT_DOUBLE_EQ(m.stats[ARs], 0.0);
  EXPECT_DOUBLE_EQ(m.stats[ARl], 1.0);
  // The range is the annotation's area (a segment's, in COCO), not the box's: a 100x100 box whose
  // object covers 500 px is small.
  CocoTruth thin = gt(1, 1, {0, 0, 100, 100});
  thin.area = 500;
  const CocoMetrics t = evaluate_coco({1}, {1}, {thin}, {det(1, 1, {0, 0, 100, 100}, 0.9)});
  EXPECT_DOUBLE_EQ(t.stats[APs], 1.0);
  EXPECT_DOUBLE_EQ(t.stats[APm], -1.0);
  // An unmatched detection outside a range is not that range's false positive.
  const CocoMetrics fp = evaluate_coco({1}, {1}, {gt(1, 1, {0, 0, 10, 10})},
                                       {det(1, 1, {300, 300, 200, 200}, 0.99), det(1, 1, {0, 0, 10, 10}, 0.5)});
  EXPECT_DOUBLE_EQ(fp.stats[APs], 1.0);
  EXPECT_NEAR(fp.stats[AP], 0.5, 1e-12);
}

TEST(CocoEval, TiesFollowImageOrderAsPycocotools) {
  // Equal scores: images in ascending id order, whatever order they were given in. Image 2's
  // detection is false, image 1's true: the true one ranks first, so AP is 1.
  std::vector<CocoTruth> truth = {gt(1, 1, {0, 0, 60, 60})};
  std::vector<CocoResult> results = {det(2, 1, {0, 0, 60, 60}, 0.5), det(1, 1, {0, 0, 60, 60}, 0.5)};
  EXPECT_DOUBLE_EQ(evaluate_coco({2, 1}, {1}, truth, results).stats[AP], 1.0);
}

// Random sets (fixed seed): what must hold whatever the data. The figures do not depend on the
// order results are given in (distinct scores), nor on images that have neither truth nor
// results; every figure is -1 or in [0, 1]; AR grows with maxDets.
TEST(CocoEval, RandomSetsKeepThePropertiesOfTheMetric) {
  std::mt19937 rng(2023);
  std::uniform_real_distribution<double> u(0, 1);
  for (int round = 0; round < 20; ++round) {
    std::vector<CocoTruth> truth;
    std::vector<CocoResult> results;
    std::vector<int64_t> images = {1, 2, 3, 4, 5, 6};
    for (int64_t image : images)
      for (int k = 0, n = static_cast<int>(u(rng) * 8); k < n; ++k) {
        const double w = 5 + u(rng) * 150, h = 5 + u(rng) * 150;
        CocoTruth t = gt(image, 1 + static_cast<int64_t>(u(rng) * 3), {u(rng) * 400, u(rng) * 300, w, h}, u(rng) < 0.1);
        truth.push_back(t);
        if (u(rng) < 0.8) {  // found, somewhat off
          const CocoBox b{t.box.x + (u(rng) - 0.5) * 0.3 * w, t.box.y + (u(rng) - 0.5) * 0.3 * h, w * (0.8 + 0.4 * u(rng)),
                          h * (0.8 + 0.4 * u(rng))};
          results.push_back(det(image, t.category_id, b, u(rng)));
        }
        if (u(rng) < 0.5) results.push_back(det(image, 1 + static_cast<int64_t>(u(rng) * 3), {u(rng) * 400, u(rng) * 300, w, h}, u(rng)));
      }
    const std::vector<int64_t> categories = {1, 2, 3};
    const CocoMetrics m = evaluate_coco(images, categories, truth, results);
    for (int i = 0; i < kCocoStats; ++i) EXPECT_TRUE(m.stats[i] == -1 || (m.stats[i] >= 0 && m.stats[i] <= 1)) << m.stats[i];
    EXPECT_LE(m.stats[AR1], m.stats[AR10] + 1e-12);
    EXPECT_LE(m.stats[AR10], m.stats[AR100] + 1e-12);

    std::vector<CocoResult> shuffled = results;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    std::vector<int64_t> more_images = {9, 6, 5, 4, 3, 2, 1, 7};
    const CocoMetrics s = evaluate_coco(more_images, categories, truth, shuffled);
    for (int i = 0; i < kCocoStats; ++i) EXPECT_NEAR(s.stats[i], m.stats[i], 1e-12) << kCocoStatNames[i] << " round " << round;
  }
}

TEST(CocoEval, SummaryPrintsAsPycocotools) {
  CocoMetrics m;
  m.stats.fill(0.5);
  m.stats[APs] = -1;
  const std::string text = format_coco_summary(m);
  EXPECT_NE(text.find(" Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.500\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" Average Precision  (AP) @[ IoU=0.50:0.95 | area= small | maxDets=100 ] = -1.000\n"), std::string::npos);
  EXPECT_NE(text.find(" Average Recall     (AR) @[ IoU=0.50:0.95 | area=   all | maxDets=  1 ] = 0.500\n"), std::string::npos);
}

}  // namespace
}  // namespace sd::eval
