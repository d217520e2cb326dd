#include <array>
#include <cmath>
#include <random>

#include "postprocess/nms.h"
#include "postprocess_test_util.h"

namespace sd {
namespace {

using testing::expect_same;

// Boxes in clusters (several overlapping candidates per object, as a detector emits them), with
// integer-snapped coordinates and quantised scores in some sets so exact IoU ties and score ties occur.
Detections random_set(std::mt19937& rng, int n, int classes, bool snap, bool tie_scores) {
  std::uniform_real_distribution<float> u(0.f, 1.f);
  const int clusters = 1 + static_cast<int>(u(rng) * 30);
  std::vector<Detection> centres;
  for (int k = 0; k < clusters; ++k) {
    float w = 10 + u(rng) * 150, h = 10 + u(rng) * 150, x = u(rng) * 600, y = u(rng) * 600;
    centres.push_back({x, y, x + w, y + h, 0, static_cast<int>(u(rng) * classes)});
  }
  Detections d;
  for (int i = 0; i < n; ++i) {
    Detection c = centres[static_cast<size_t>(u(rng) * clusters) % centres.size()];
    float jitter = 0.25f * (c.x2 - c.x1);
    auto j = [&] { return (u(rng) - 0.5f) * jitter; };
    Detection b{c.x1 + j(), c.y1 + j(), c.x2 + j(), c.y2 + j(), u(rng), c.class_id};
    if (u(rng) < 0.2f) b.class_id = static_cast<int>(u(rng) * classes);  // a confused class
    if (u(rng) < 0.05f) b = c, b.score = u(rng);                          // an exact duplicate box
    if (snap) b.x1 = std::round(b.x1), b.y1 = std::round(b.y1), b.x2 = std::round(b.x2), b.y2 = std::round(b.y2);
    if (tie_scores) b.score = std::round(b.score * 16) / 16;
    d.push_back(b);
  }
  return d;
}

TEST(Nms, MatchesReferenceOnThousandsOfRandomSets) {
  std::mt19937 rng(1234);
  Nms nms;
  int compared = 0, suppressed_something = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int n = static_cast<int>(rng() % 400);
    const int classes = 1 + static_cast<int>(rng() % 80);
    Detections cand = random_set(rng, n, classes, trial % 3 == 0, trial % 4 == 0);
    NmsOptions opt;
    opt.iou_threshold = std::array{0.3f, 0.45f, 0.5f, 0.7f}[trial % 4];
    opt.agnostic = trial % 2 == 1;
    opt.max_det = std::array{300, 0, 5, 50}[(trial / 2) % 4];
    Detections want = nms_reference(cand, opt);
    Detections got = cand;
    nms.run(got, opt);
    ASSERT_EQ(got.size(), want.size()) << "trial " << trial;
    for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(testing::same(got[i], want[i])) << "trial " << trial << " box " << i;
    ++compared;
    if (got.size() < cand.size()) ++suppressed_something;
  }
  EXPECT_EQ(compared, 3000);
  EXPECT_GT(suppressed_something, 2500);  // the sets really exercise suppression
}

TEST(Nms, ClassAwareKeepsOverlappingBoxesOfOtherClasses) {
  Detections d = {{0, 0, 100, 100, 0.9f, 1}, {2, 2, 100, 100, 0.8f, 1}, {1, 1, 100, 100, 0.7f, 2}};
  Nms nms;
  Detections aware = d;
  nms.run(aware, {0.45f, false, 300});
  expect_same(aware, {d[0], d[2]});
  Detections agnostic = d;
  nms.run(agnostic, {0.45f, true, 300});
  expect_same(agnostic, {d[0]});
}

TEST(Nms, SuppressesOnlyAboveTheThreshold) {
  // IoU of these two is exactly 0.5 (50 / 100).
  Detections d = {{0, 0, 10, 10, 0.9f, 0}, {0, 0, 10, 5, 0.8f, 0}};
  ASSERT_EQ(iou(d[0], d[1]), 0.5f);
  Nms nms;
  Detections keep = d;
  nms.run(keep, {0.5f, false, 300});
  EXPECT_EQ(keep.size(), 2u);
  Detections drop = d;
  nms.run(drop, {0.49f, false, 300});
  EXPECT_EQ(drop.size(), 1u);
}

TEST(Nms, SortsByScoreAndBreaksTiesByInputOrder) {
  // Disjoint boxes, two pairs of equal scores: output by score, then input order.
  Detections d = {{0, 0, 1, 1, 0.5f, 0}, {10, 0, 11, 1, 0.9f, 0}, {20, 0, 21, 1, 0.5f, 0}, {30, 0, 31, 1, 0.9f, 0}};
  Nms nms;
  Detections got = d;
  nms.run(got, {});
  expect_same(got, {d[1], d[3], d[0], d[2]});
  expect_same(nms_reference(d, {}), {d[1], d[3], d[0], d[2]});
  // Two identical boxes with the same score: the first one in the input survives.
  Detections twins = {{0, 0, 5, 5, 0.7f, 3}, {0, 0, 5, 5, 0.7f, 3}};
  Detections t = twins;
  nms.run(t, {});
  ASSERT_EQ(t.size(), 1u);
}

TEST(Nms, StopsAtMaxDetWithTheBestBoxes) {
  Detections d;
  for (int i = 0; i < 50; ++i) d.push_back({i * 20.f, 0, i * 20.f + 10, 10, i / 100.f, 0});
  Nms nms;
  nms.run(d, {0.45f, false, 3});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_FLOAT_EQ(d[0].score, 0.49f);
  EXPECT_FLOAT_EQ(d[2].score, 0.47f);
}

TEST(Nms, EmptyInputStaysEmpty) {
  Detections d;
  Nms nms;
  nms.run(d, {});
  EXPECT_TRUE(d.empty());
  EXPECT_TRUE(nms_reference(d, {}).empty());
}

TEST(Nms, DoesNotAllocateInSteadyState) {
  std::mt19937 rng(7);
  Detections first = random_set(rng, 300, 10, false, false);
  Detections frames[4];
  for (auto& f : frames) f = random_set(rng, 300, 10, false, false);
  Nms nms;
  Detections work;
  work.reserve(300);
  work.assign(first.begin(), first.end());
  nms.run(work, {0.45f, false, 0});  // grows the scratch to 300 candidates, no limit
  const int64_t before = testing::allocation_count();
  if (before < 0) GTEST_SKIP() << "allocation counting is off in this build";
  for (auto& f : frames) {
    work.assign(f.begin(), f.end());
    nms.run(work, {0.45f, false, 0});
  }
  EXPECT_EQ(testing::allocation_count() - before, 0);
}

}  // namespace
}  // namespace sd
