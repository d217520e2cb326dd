// The GPU check's detection comparison (postprocess/detection_parity.h): its plain YOLOv8 decode
// is the decoder's plus NMS, and the verdict counts a box that moved, changed class or vanished,
// but not one whose score sits on the threshold's edge.
#include <gtest/gtest.h>

#include <random>

#include "core/tensor.h"
#include "postprocess/detection_parity.h"
#include "postprocess/nms.h"
#include "postprocess/yolov8_decoder.h"

namespace sd {
namespace {

TEST(DetectionParity, ThePlainYolov8DecodeIsTheDecodersFollowedByNms) {
  const int64_t nc = 5, anchors = 400, channels = 4 + nc;
  std::vector<float> out(static_cast<size_t>(channels * anchors));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> pos(0.f, 320.f), size(4.f, 60.f), score(0.f, 0.6f);
  for (int64_t a = 0; a < anchors; ++a) {
    out[static_cast<size_t>(0 * anchors + a)] = pos(rng);
    out[static_cast<size_t>(1 * anchors + a)] = pos(rng);
    out[static_cast<size_t>(2 * anchors + a)] = size(rng);
    out[static_cast<size_t>(3 * anchors + a)] = size(rng);
    for (int64_t c = 0; c < nc; ++c) out[static_cast<size_t>((4 + c) * anchors + a)] = score(rng);
  }
  TensorView v{out.data(), Shape{1, channels, anchors}};
  Detections expected;
  YoloV8Decoder({0, static_cast<int>(nc), false}).decode_plain(std::span<const TensorView>(&v, 1), 0, {0.25f, 320, 320}, expected);
  Nms().run(expected, NmsOptions{0.45f});
  const Detections got = decode_yolov8_plain(out.data(), channels, anchors, 0.25f, 0.45f);
  ASSERT_GT(expected.size(), 10u);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].class_id, expected[i].class_id);
    EXPECT_EQ(got[i].score, expected[i].score);
    EXPECT_EQ(got[i].x1, expected[i].x1);
    EXPECT_EQ(got[i].y2, expected[i].y2);
  }
}

Detection det(float x1, float y1, float x2, float y2, float score, int cls) { return Detection{x1, y1, x2, y2, score, cls}; }

TEST(DetectionParity, SameObjectsWithinAPixelAreTheSameSet) {
  const Detections ref{det(10, 10, 50, 50, 0.9f, 0), det(100, 100, 140, 160, 0.6f, 2)};
  const Detections got{det(100.4f, 99.6f, 140.2f, 160.9f, 0.61f, 2), det(10.5f, 10, 50, 49.2f, 0.89f, 0)};
  const DetectionParity p = compare_detections(ref, got, 0.25f, 0.02f, 1.f);
  EXPECT_TRUE(p.same());
  EXPECT_EQ(p.matched, 2);
  EXPECT_NEAR(p.max_corner_px, 0.9, 1e-5);
}

TEST(DetectionParity, AMovedBoxAnotherClassOrAMissingObjectAreDifferences) {
  const Detections ref{det(10, 10, 50, 50, 0.9f, 0), det(100, 100, 140, 160, 0.6f, 2), det(200, 10, 220, 30, 0.5f, 1)};
  // The first moved by 1.5 px, the second changed class, the third is gone.
  const Detections got{det(11.5f, 10, 50, 50, 0.9f, 0), det(100, 100, 140, 160, 0.6f, 3)};
  const DetectionParity p = compare_detections(ref, got, 0.25f, 0.02f, 1.f);
  EXPECT_FALSE(p.same());
  EXPECT_EQ(p.matched, 0);
  EXPECT_EQ(p.missing, 3);
  EXPECT_EQ(p.extra, 2);
}

TEST(DetectionParity, AScoreOnTheThresholdsEdgeIsBorderlineNotADifference) {
  const Detections ref{det(10, 10, 50, 50, 0.9f, 0), det(60, 60, 80, 80, 0.2501f, 1)};
  const Detections got{det(10, 10, 50, 50, 0.9f, 0), det(300, 300, 310, 310, 0.26f, 2)};
  const DetectionParity p = compare_detections(ref, got, 0.25f, 0.02f, 1.f);
  EXPECT_TRUE(p.same());
  EXPECT_EQ(p.matched, 1);
  EXPECT_EQ(p.borderline, 2);
}

}  // namespace
}  // namespace sd
