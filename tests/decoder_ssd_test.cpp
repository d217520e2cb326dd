#include <cmath>
#include <random>

#include "postprocess/ssd_decoder.h"
#include "postprocess_test_util.h"

namespace sd {
namespace {

using testing::at;
using testing::expect_same;
using testing::filled;

// Boxes [N, A, 4] or [N, 4, A] and scores [N, A, C] or [N, C, A] filled from anchor-major values.
struct SsdTensors {
  Tensor boxes, scores;
  SsdTensors(int n, int anchors, int classes, bool boxes_cf, bool scores_cf)
      : boxes(boxes_cf ? Shape{n, 4, anchors} : Shape{n, anchors, 4}),
        scores(scores_cf ? Shape{n, classes, anchors} : Shape{n, anchors, classes}),
        boxes_cf_(boxes_cf), scores_cf_(scores_cf) {
    std::fill_n(boxes.data(), boxes.numel(), 0.f);
    std::fill_n(scores.data(), scores.numel(), 0.f);
  }
  float& box(int b, int a, int k) { return boxes_cf_ ? at(boxes, {b, k, a}) : at(boxes, {b, a, k}); }
  float& score(int b, int a, int c) { return scores_cf_ ? at(scores, {b, c, a}) : at(scores, {b, a, c}); }
  bool boxes_cf_, scores_cf_;
};

SsdHead decoded_head(int anchors, int classes, bool boxes_cf, bool scores_cf) {
  SsdHead h;
  h.boxes_output = 0, h.scores_output = 1;
  h.boxes_channel_first = boxes_cf, h.scores_channel_first = scores_cf;
  h.num_anchors = anchors, h.num_scores = classes;
  h.input_width = 200, h.input_height = 100;
  return h;
}

TEST(DecoderSsd, DecodedBoxesGiveOneCandidatePerPassingClassWithoutBackground) {
  for (bool boxes_cf : {false, true})
    for (bool scores_cf : {false, true}) {
      SsdTensors t(2, 5, 4, boxes_cf, scores_cf);
      for (int a = 0; a < 5; ++a) t.score(1, a, 0) = 1.f, t.score(0, a, 0) = 1.f;  // background
      float box[4] = {0.1f, 0.2f, 0.5f, 0.6f};
      for (int k = 0; k < 4; ++k) t.box(1, 2, k) = box[k];
      float probs[4] = {0.f, 0.7f, 0.25f, 0.05f};  // class 1 and class 2 (exactly at conf) pass
      for (int c = 0; c < 4; ++c) t.score(1, 2, c) = probs[c];
      t.score(0, 4, 3) = 0.9f;  // image 0 only
      auto outs = testing::views({&t.boxes, &t.scores});
      SsdDecoder dec(decoded_head(5, 4, boxes_cf, scores_cf));
      EXPECT_EQ(dec.num_classes(), 3);
      Detections got;
      dec.decode(outs, 1, {0.25f, 0, 0}, got);
      const Detection want_box{0.1f * 200, 0.2f * 100, 0.5f * 200, 0.6f * 100, 0, 0};
      Detection c0 = want_box, c1 = want_box;
      c0.score = 0.7f, c0.class_id = 0;
      c1.score = 0.25f, c1.class_id = 1;
      expect_same(got, {c0, c1});
    }
}

TEST(DecoderSsd, RawOffsetsAreDecodedAgainstThePriorsWithSoftmaxScores) {
  for (bool cf : {false, true}) {
    SsdTensors t(1, 2, 3, cf, cf);
    SsdHead h = decoded_head(2, 3, cf, cf);
    h.boxes = SsdBoxEncoding::kPriorOffsets;
    h.scores = SsdScoreKind::kLogits;
    h.priors = {0.5f, 0.5f, 0.2f, 0.4f, 0.25f, 0.75f, 0.5f, 0.5f};
    // Anchor 0: logits (0, ln 3, -inf-ish) -> p = (1/4, 3/4, ~0); offsets move the centre by
    // 0.1 * 1 * w and scale w by exp(0.2 * ln 2 / 0.2) = 2.
    t.score(0, 0, 0) = 0.f, t.score(0, 0, 1) = std::log(3.f), t.score(0, 0, 2) = -40.f;
    t.box(0, 0, 0) = 1.f, t.box(0, 0, 1) = 0.f, t.box(0, 0, 2) = std::log(2.f) / 0.2f, t.box(0, 0, 3) = 0.f;
    // Anchor 1: background wins by far: skipped.
    t.score(0, 1, 0) = 10.f;
    auto outs = testing::views({&t.boxes, &t.scores});
    SsdDecoder dec(h);
    Detections got;
    dec.decode(outs, 0, {0.25f, 0, 0}, got);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].class_id, 0);
    EXPECT_NEAR(got[0].score, 0.75f, 1e-6f);
    const float cx = 0.5f + 0.1f * 0.2f, w = 0.2f * 2.f;
    EXPECT_NEAR(got[0].x1, (cx - w / 2) * 200, 1e-3f);
    EXPECT_NEAR(got[0].x2, (cx + w / 2) * 200, 1e-3f);
    EXPECT_NEAR(got[0].y1, (0.5f - 0.2f) * 100, 1e-3f);
    EXPECT_NEAR(got[0].y2, (0.5f + 0.2f) * 100, 1e-3f);
    // A zero threshold keeps every foreground class of every anchor.
    got.clear();
    dec.decode(outs, 0, {0.f, 0, 0}, got);
    EXPECT_EQ(got.size(), 4u);
  }
}

TEST(DecoderSsd, Ssd300PriorsMatchTheReferenceGeometry) {
  auto size_major = ssd300_coco_priors(SsdPriorOrder::kSizeMajor);
  auto position_major = ssd300_coco_priors(SsdPriorOrder::kPositionMajor);
  ASSERT_EQ(size_major.size(), 4u * kSsd300Priors);
  ASSERT_EQ(position_major.size(), 4u * kSsd300Priors);
  // First prior of both: the first cell of the 38x38 map, size 21/300.
  EXPECT_NEAR(size_major[0], 0.5f / 37.5f, 1e-7f);
  EXPECT_NEAR(size_major[2], 0.07f, 1e-7f);
  // Second prior: size-major moves to the next cell, position-major to the next size (sqrt(21*45)/300).
  EXPECT_NEAR(size_major[4], 1.5f / 37.5f, 1e-7f);
  EXPECT_NEAR(size_major[6], 0.07f, 1e-7f);
  EXPECT_NEAR(position_major[4], 0.5f / 37.5f, 1e-7f);
  EXPECT_NEAR(position_major[6], std::sqrt(21.0 * 45.0) / 300.0, 1e-7f);
  // Last prior: the 1x1 map, ratio-2 box transposed: w = 0.87 / sqrt(2), h = 0.87 * sqrt(2) clamped to 1.
  const float* last = size_major.data() + 4 * (kSsd300Priors - 1);
  EXPECT_NEAR(last[0], 0.5f, 1e-7f);
  EXPECT_NEAR(last[2], 0.87 / std::sqrt(2.0), 1e-6f);
  EXPECT_EQ(last[3], 1.f);
}

// The block scan with the softmax bound against every-anchor-every-class decoding, on SSD300-sized
// heads with background-dominated logits and a few confident anchors, in all four layouts.
TEST(DecoderSsd, FastPathMatchesPlainOnRandomHeads) {
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0.f, 1.5f);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  const int anchors = kSsd300Priors, classes = 81;
  for (bool cf : {false, true})
    for (bool logits : {true, false}) {
      SsdTensors t(1, anchors, classes, cf, cf);
      for (int a = 0; a < anchors; ++a) {
        for (int k = 0; k < 4; ++k) t.box(0, a, k) = logits ? noise(rng) * 0.5f : u(rng);
        float row[81];
        for (int c = 0; c < classes; ++c) row[c] = noise(rng) - 2.f;
        row[0] += 6.f;
        if (u(rng) < 0.03f) row[1 + static_cast<int>(u(rng) * 80)] += 9.f;  // an object
        if (!logits) {  // turn into probabilities
          float m = row[0], s = 0;
          for (float v : row) m = std::max(m, v);
          for (float& v : row) s += (v = std::exp(v - m));
          for (float& v : row) v /= s;
        }
        for (int c = 0; c < classes; ++c) t.score(0, a, c) = row[c];
      }
      SsdHead h = decoded_head(anchors, classes, cf, cf);
      if (logits) {
        h.boxes = SsdBoxEncoding::kPriorOffsets;
        h.scores = SsdScoreKind::kLogits;
        h.priors = ssd300_coco_priors(SsdPriorOrder::kSizeMajor);
      }
      SsdDecoder dec(h);
      auto outs = testing::views({&t.boxes, &t.scores});
      for (float conf : {0.05f, 0.25f, 0.6f}) {
        Detections fast, plain;
        dec.decode(outs, 0, {conf, 300, 300}, fast);
        dec.decode_plain(outs, 0, {conf, 300, 300}, plain);
        EXPECT_GT(plain.size(), 50u);
        expect_same(fast, plain);
      }
    }
}

}  // namespace
}  // namespace sd
