// MOT metrics on constructed cases whose values are worked out by hand (py-motmetrics' rules).
#include <gtest/gtest.h>

#include <cmath>

#include "eval/mot_metrics.h"

namespace sd::eval {
namespace {

MotObject obj(int64_t id, float x, float y = 0, float size = 10) {
  MotObject o;
  o.id = id;
  o.box.x1 = x;
  o.box.y1 = y;
  o.box.x2 = x + size;
  o.box.y2 = y + size;
  return o;
}

TEST(MotMetrics, PerfectTrackingScoresOne) {
  MotAccumulator acc;
  for (int f = 0; f < 10; ++f)
    acc.add_frame(std::vector{obj(1, f), obj(2, 100 + f)}, std::vector{obj(7, f), obj(9, 100 + f)});
  const MotMetrics m = acc.summary();
  EXPECT_EQ(m.frames, 10);
  EXPECT_EQ(m.matches, 20);
  EXPECT_EQ(m.id_switches, 0);
  EXPECT_DOUBLE_EQ(m.mota, 1.0);
  EXPECT_DOUBLE_EQ(m.motp, 0.0);
  EXPECT_DOUBLE_EQ(m.idf1, 1.0);
  EXPECT_EQ(m.mostly_tracked, 2);
  EXPECT_EQ(m.fragmentations, 0);
}

TEST(MotMetrics, AnIdentitySwitchCostsMotaOnceAndHalvesIdf1) {
  // One object, four frames, the tracker calls it 1, 1, 2, 2.
  MotAccumulator acc;
  const int64_t hyp[] = {1, 1, 2, 2};
  for (int f = 0; f < 4; ++f) acc.add_frame(std::vector{obj(5, 0)}, std::vector{obj(hyp[f], 0)});
  const MotMetrics m = acc.summary();
  EXPECT_EQ(m.id_switches, 1);
  EXPECT_DOUBLE_EQ(m.mota, 0.75);  // 1 - 1/4
  EXPECT_EQ(m.idtp, 2);            // one of the two hypothesis ids pairs with the object
  EXPECT_DOUBLE_EQ(m.idf1, 0.5);   // 2 * 2 / (4 + 4)
  EXPECT_DOUBLE_EQ(m.idp, 0.5);
  EXPECT_DOUBLE_EQ(m.idr, 0.5);
}

TEST(MotMetrics, SwitchingBackIsASecondSwitch) {
  MotAccumulator acc;
  const int64_t hyp[] = {1, 2, 1};
  for (int f = 0; f < 3; ++f) acc.add_frame(std::vector{obj(5, 0)}, std::vector{obj(hyp[f], 0)});
  EXPECT_EQ(acc.summary().id_switches, 2);
}

TEST(MotMetrics, EachSwitchIsListedWithItsFrameObjectAndTracks) {
  // Object 5 is called 1, 2, 2, 1 (two switches: frames 1 and 3); object 6 keeps 8 throughout.
  MotAccumulator acc;
  const int64_t hyp[] = {1, 2, 2, 1};
  for (int f = 0; f < 4; ++f)
    acc.add_frame(std::vector{obj(5, 0), obj(6, 100)}, std::vector{obj(hyp[f], 0), obj(8, 100)});
  const MotMetrics m = acc.summary();
  ASSERT_EQ(m.id_switches, 2);
  ASSERT_EQ(m.switches.size(), 2u);
  EXPECT_EQ(m.switches[0].frame, 1);
  EXPECT_EQ(m.switches[0].truth_id, 5);
  EXPECT_EQ(m.switches[0].from, 1);
  EXPECT_EQ(m.switches[0].to, 2);
  EXPECT_EQ(m.switches[1].frame, 3);
  EXPECT_EQ(m.switches[1].from, 2);
  EXPECT_EQ(m.switches[1].to, 1);
}

TEST(MotMetrics, MissesAndFalsePositives) {
  MotAccumulator acc;
  acc.add_frame(std::vector{obj(1, 0), obj(2, 50)}, std::vector{obj(1, 0), obj(3, 200)});  // 2 missed, 3 false
  acc.add_frame(std::vector{obj(1, 0)}, {});                                                 // 1 missed
  acc.add_frame({}, std::vector{obj(4, 0)});                                                 // 4 false
  const MotMetrics m = acc.summary();
  EXPECT_EQ(m.truth_boxes, 3);
  EXPECT_EQ(m.hypothesis_boxes, 3);
  EXPECT_EQ(m.matches, 1);
  EXPECT_EQ(m.misses, 2);
  EXPECT_EQ(m.false_positives, 2);
  EXPECT_DOUBLE_EQ(m.mota, 1.0 - 4.0 / 3.0);  // MOTA can be negative
  EXPECT_EQ(m.idtp, 1);
  EXPECT_DOUBLE_EQ(m.idf1, 2.0 / 6.0);
}

TEST(MotMetrics, OverlapBelowTheThresholdIsNoMatch) {
  MotAccumulator acc;
  // 10x10 boxes shifted by 5: IoU 50/150 = 1/3 < 0.5.
  acc.add_frame(std::vector{obj(1, 0)}, std::vector{obj(1, 5)});
  // Shifted by 2: IoU 80/120 = 2/3: matched, distance 1/3.
  acc.add_frame(std::vector{obj(1, 0)}, std::vector{obj(1, 2)});
  const MotMetrics m = acc.summary();
  EXPECT_EQ(m.matches, 1);
  EXPECT_EQ(m.misses, 1);
  EXPECT_EQ(m.false_positives, 1);
  EXPECT_NEAR(m.motp, 1.0 / 3.0, 1e-6);
}

TEST(MotMetrics, LastFramesCorrespondenceIsKeptOverABetterNewOne) {
  // Frame 2: hypothesis 1 still overlaps object 1 (IoU 2/3), hypothesis 2 sits exactly on it.
  // CLEAR MOT keeps 1 (no switch) and calls 2 a false positive.
  MotAccumulator acc;
  acc.add_frame(std::vector{obj(1, 0)}, std::vector{obj(1, 0)});
  acc.add_frame(std::vector{obj(1, 0)}, std::vector{obj(1, 2), obj(2, 0)});
  const MotMetrics m = acc.summary();
  EXPECT_EQ(m.id_switches, 0);
  EXPECT_EQ(m.false_positives, 1);
}

TEST(MotMetrics, HungarianMatchingPrefersMoreMatches) {
  // Hypothesis A overlaps both objects, B only the first: greedy by IoU would give A to the first
  // and leave the second missed; the assignment matches both.
  MotAccumulator acc;
  MotObject t1 = obj(1, 0, 0, 10), t2 = obj(2, 3, 0, 10);
  MotObject a = obj(10, 1, 0, 10), b = obj(11, -2, 0, 10);
  // IoU(t1, a) = 90/110, IoU(t2, a) = 80/120, IoU(t1, b) = 80/120, IoU(t2, b) = 50/150.
  acc.add_frame(std::vector{t1, t2}, std::vector{a, b});
  const MotMetrics m = acc.summary();
  EXPECT_EQ(m.matches, 2);
  EXPECT_EQ(m.misses, 0);
}

TEST(MotMetrics, FragmentationsAndMostlyTrackedOrLost) {
  MotAccumulator acc;
  // Object 1, 10 frames: tracked, missed, tracked, missed x2, tracked x5: 2 fragmentations,
  // tracked 7/10 (partially). Object 2, 10 frames, tracked once: mostly lost. Object 3, tracked
  // 9/10 with its one miss at the end: mostly tracked, no fragmentation (it never comes back).
  const bool seen1[] = {1, 0, 1, 0, 0, 1, 1, 1, 1, 1};
  for (int f = 0; f < 10; ++f) {
    std::vector<MotObject> truth{obj(1, 0), obj(2, 100), obj(3, 200)};
    std::vector<MotObject> hyp;
    if (seen1[f]) hyp.push_back(obj(1, 0));
    if (f == 4) hyp.push_back(obj(2, 100));
    if (f < 9) hyp.push_back(obj(3, 200));
    acc.add_frame(truth, hyp);
  }
  const MotMetrics m = acc.summary();
  EXPECT_EQ(m.fragmentations, 2);
  EXPECT_EQ(m.truth_tracks, 3);
  EXPECT_EQ(m.partially_tracked, 1);
  EXPECT_EQ(m.mostly_lost, 1);
  EXPECT_EQ(m.mostly_tracked, 1);
}

TEST(MotMetrics, IdentityPairingIsGlobalNotPerFrame) {
  // Object 1 is hypothesis 10 for 6 frames, then 11 for 4; object 2 is hypothesis 11 for the first
  // 6 frames and unseen after. Per frame, 11 looks like object 1's at the end; globally, 11 is
  // object 2's (6 frames against 4).
  MotAccumulator acc;
  for (int f = 0; f < 10; ++f) {
    std::vector<MotObject> truth{obj(1, 0), obj(2, 100)};
    std::vector<MotObject> hyp{obj(f < 6 ? 10 : 11, 0)};
    if (f < 6) hyp.push_back(obj(11, 100));
    acc.add_frame(truth, hyp);
  }
  const MotMetrics m = acc.summary();
  // Pairs: (1,10) 6 frames, (1,11) 4 frames, (2,11) 6 frames. Best: (1,10) + (2,11) = 12.
  EXPECT_EQ(m.idtp, 12);
  EXPECT_EQ(m.truth_boxes, 20);
  EXPECT_EQ(m.hypothesis_boxes, 16);
  EXPECT_DOUBLE_EQ(m.idf1, 24.0 / 36.0);
}

TEST(MotMetrics, ClassAwareMatchesOnlyTheSameClass) {
  // One object of class 1, a hypothesis on it of class 2: class-agnostic a match, class-aware a
  // miss and a false positive.
  MotObject truth = obj(1, 0), hyp = obj(9, 0);
  truth.box.class_id = 1;
  hyp.box.class_id = 2;
  MotAccumulator agnostic, aware(0.5, /*class_aware=*/true);
  agnostic.add_frame(std::vector{truth}, std::vector{hyp});
  aware.add_frame(std::vector{truth}, std::vector{hyp});
  EXPECT_EQ(agnostic.summary().matches, 1);
  EXPECT_DOUBLE_EQ(agnostic.summary().idf1, 1.0);
  const MotMetrics m = aware.summary();
  EXPECT_EQ(m.matches, 0);
  EXPECT_EQ(m.misses, 1);
  EXPECT_EQ(m.false_positives, 1);
  EXPECT_EQ(m.idtp, 0);
  EXPECT_DOUBLE_EQ(m.mota, -1.0);
}

}  // namespace
}  // namespace sd::eval

// HOTA (TrackEval's computation) on cases worked out by hand.
namespace sd::eval {
namespace {

MotObject box_of_height(int64_t id, float h) {
  MotObject o;
  o.id = id;
  o.box.x2 = 10;
  o.box.y2 = h;
  return o;
}

TEST(Hota, PerfectTrackingScoresOne) {
  MotAccumulator acc;
  for (int f = 0; f < 5; ++f) acc.add_frame(std::vector{obj(1, f), obj(2, 50 + f)}, std::vector{obj(8, f), obj(9, 50 + f)});
  const HotaMetrics h = acc.summary().hota;
  EXPECT_NEAR(h.hota, 1.0, 1e-9);
  EXPECT_NEAR(h.deta, 1.0, 1e-9);
  EXPECT_NEAR(h.assa, 1.0, 1e-9);
  EXPECT_NEAR(h.loca, 1.0, 1e-9);
}

TEST(Hota, AnIdentitySwitchHalfWayHalvesAssociation) {
  // Detection perfect (DetA 1); the object is 1 for two frames, 2 for two: each pair of identities
  // shares 2 of the 4 + 2 - 2 frames they cover, AssA = 0.5, HOTA = sqrt(0.5) at every alpha.
  MotAccumulator acc;
  const int64_t hyp[] = {1, 1, 2, 2};
  for (int f = 0; f < 4; ++f) acc.add_frame(std::vector{obj(5, 0)}, std::vector{obj(hyp[f], 0)});
  const HotaMetrics h = acc.summary().hota;
  EXPECT_NEAR(h.deta, 1.0, 1e-9);
  EXPECT_NEAR(h.assa, 0.5, 1e-9);
  EXPECT_NEAR(h.hota, std::sqrt(0.5), 1e-9);
}

TEST(Hota, LocalizationCountsOnlyAtTheAlphasItReaches) {
  // Every box at IoU 0.62 with its truth, identities perfect: matched at alpha 0.05 to 0.60 (12 of
  // the 19 thresholds), nothing at 0.65 to 0.95: HOTA = DetA = AssA = 12/19.
  MotAccumulator acc;
  for (int f = 0; f < 3; ++f) acc.add_frame(std::vector{box_of_height(1, 10)}, std::vector{box_of_height(4, 6.2f)});
  const HotaMetrics h = acc.summary().hota;
  EXPECT_NEAR(h.deta, 12.0 / 19, 1e-9);
  EXPECT_NEAR(h.assa, 12.0 / 19, 1e-9);
  EXPECT_NEAR(h.hota, 12.0 / 19, 1e-9);
}

TEST(Hota, MissedFramesCostDetectionAndAssociation) {
  // Object 1 in 4 frames, found in the first 2 only: DetA 2 / (2 + 2) = 0.5; the pair covers
  // 4 + 2 - 2 frames and shares 2: AssA 0.5; HOTA 0.5.
  MotAccumulator acc;
  for (int f = 0; f < 4; ++f) {
    std::vector<MotObject> hyp;
    if (f < 2) hyp.push_back(obj(3, 0));
    acc.add_frame(std::vector{obj(1, 0)}, hyp);
  }
  const HotaMetrics h = acc.summary().hota;
  EXPECT_NEAR(h.deta, 0.5, 1e-9);
  EXPECT_NEAR(h.assa, 0.5, 1e-9);
  EXPECT_NEAR(h.hota, 0.5, 1e-9);
}

}  // namespace
}  // namespace sd::eval
