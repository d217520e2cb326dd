#include <cmath>
#include <random>

#include "postprocess/yolov8_decoder.h"
#include "postprocess_test_util.h"

namespace sd {
namespace {

using testing::at;
using testing::expect_same;
using testing::filled;

// [2, 4+3, 10]: image 1 holds two objects, image 0 one elsewhere.
Tensor channel_major_head() {
  Tensor t = filled({2, 7, 10}, 0.001f);
  auto put = [&](int b, int a, float cx, float cy, float w, float h, std::array<float, 3> s) {
    at(t, {b, 0, a}) = cx, at(t, {b, 1, a}) = cy, at(t, {b, 2, a}) = w, at(t, {b, 3, a}) = h;
    for (int c = 0; c < 3; ++c) at(t, {b, 4 + c, a}) = s[static_cast<size_t>(c)];
  };
  put(0, 0, 10, 10, 4, 4, {0.9f, 0.f, 0.f});
  put(1, 3, 100, 50, 20, 10, {0.1f, 0.9f, 0.3f});
  put(1, 7, 200, 80, 40, 60, {0.25f, 0.f, 0.1f});                        // exactly at the threshold: kept
  put(1, 9, 300, 80, 40, 60, {std::nextafter(0.25f, 0.f), 0.2f, 0.f});  // just below: dropped
  return t;
}

TEST(DecoderYoloV8, DecodesChannelMajorBoxesOfTheRequestedImage) {
  Tensor t = channel_major_head();
  auto outs = testing::views({&t});
  YoloV8Decoder dec({0, 3, false});
  Detections got;
  dec.decode(outs, 1, {0.25f, 640, 640}, got);
  expect_same(got, {{90, 45, 110, 55, 0.9f, 1}, {180, 50, 220, 110, 0.25f, 0}});
  got.clear();
  dec.decode(outs, 0, {0.25f, 640, 640}, got);
  expect_same(got, {{8, 8, 12, 12, 0.9f, 0}});
}

TEST(DecoderYoloV8, DecodesTheTransposedLayout) {
  Tensor cm = channel_major_head();
  Tensor tr = filled({2, 10, 7});
  for (int b = 0; b < 2; ++b)
    for (int k = 0; k < 7; ++k)
      for (int a = 0; a < 10; ++a) at(tr, {b, a, k}) = at(cm, {b, k, a});
  auto outs = testing::views({&tr});
  YoloV8Decoder dec({0, 3, true});
  Detections got;
  dec.decode(outs, 1, {0.25f, 640, 640}, got);
  expect_same(got, {{90, 45, 110, 55, 0.9f, 1}, {180, 50, 220, 110, 0.25f, 0}});
}

TEST(DecoderYoloV8, TiesGoToTheLowestClass) {
  Tensor t = filled({1, 7, 2});
  at(t, {0, 5, 1}) = 0.5f, at(t, {0, 6, 1}) = 0.5f;
  auto outs = testing::views({&t});
  Detections got;
  YoloV8Decoder({0, 3, false}).decode(outs, 0, {0.25f, 64, 64}, got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].class_id, 1);
}

TEST(DecoderYoloV8, OutOfRangeBatchOrWrongShapeGivesNothing) {
  Tensor t = channel_major_head();
  auto outs = testing::views({&t});
  Detections got;
  YoloV8Decoder({0, 3, false}).decode(outs, 2, {0.25f, 640, 640}, got);
  YoloV8Decoder({0, 4, false}).decode(outs, 1, {0.25f, 640, 640}, got);  // 4 classes do not fit 7 channels
  YoloV8Decoder({1, 3, false}).decode(outs, 1, {0.25f, 640, 640}, got);  // no such output
  EXPECT_TRUE(got.empty());
}

// The blocked, vectorised scan against the plain per-anchor loop, on heads shaped like real ones
// (anchor counts that are not multiples of the block or the vector width).
TEST(DecoderYoloV8, FastPathMatchesPlainOnRandomHeads) {
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> logit(-9.f, 3.f), pos(0.f, 640.f);
  for (int trial = 0; trial < 12; ++trial) {
    const int nc = std::array{1, 3, 80, 17}[trial % 4];
    const int anchors = std::array{8400, 1, 513, 2100, 37, 1029}[trial % 6];
    for (bool transposed : {false, true}) {
      Tensor t = transposed ? Tensor({2, anchors, 4 + nc}) : Tensor({2, 4 + nc, anchors});
      for (int b = 0; b < 2; ++b)
        for (int k = 0; k < 4 + nc; ++k)
          for (int a = 0; a < anchors; ++a) {
            float v = k < 4 ? pos(rng) : 1.f / (1.f + std::exp(-logit(rng)));
            if (k >= 4 && rng() % 50 == 0) v = 0.5f;  // exact ties between classes
            (transposed ? at(t, {b, a, k}) : at(t, {b, k, a})) = v;
          }
      auto outs = testing::views({&t});
      YoloV8Decoder dec({0, nc, transposed});
      for (float conf : {0.25f, 0.5f, 0.9f}) {
        Detections fast, plain;
        dec.decode(outs, 1, {conf, 640, 640}, fast);
        dec.decode_plain(outs, 1, {conf, 640, 640}, plain);
        expect_same(fast, plain);
      }
    }
  }
}

}  // namespace
}  // namespace sd
