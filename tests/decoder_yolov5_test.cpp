#include <cmath>

#include "postprocess/yolov5_decoder.h"
#include "postprocess_test_util.h"

namespace sd {
namespace {

using testing::at;
using testing::expect_same;
using testing::filled;

TEST(DecoderYoloV5, ScoresAreObjectnessTimesBestClass) {
  Tensor t = filled({2, 6, 5 + 2}, 0.01f);
  auto put = [&](int b, int a, float cx, float cy, float w, float h, float obj, float c0, float c1) {
    float v[7] = {cx, cy, w, h, obj, c0, c1};
    for (int k = 0; k < 7; ++k) at(t, {b, a, k}) = v[k];
  };
  put(1, 0, 100, 100, 50, 30, 0.8f, 0.5f, 0.25f);  // 0.8 * 0.5 = 0.4, class 0
  put(1, 2, 20, 20, 8, 8, 0.5f, 0.2f, 1.0f);       // 0.5 * 1.0 = 0.5, class 1
  put(1, 3, 60, 60, 8, 8, 0.2f, 1.0f, 1.0f);       // objectness below conf: skipped
  put(1, 4, 60, 60, 8, 8, 0.5f, 0.4f, 0.4f);       // 0.2 < conf: dropped
  put(1, 5, 60, 60, 8, 8, 0.5f, 0.5f, 0.f);        // exactly 0.25: kept
  put(0, 1, 30, 30, 10, 10, 0.9f, 0.9f, 0.f);      // other image
  auto outs = testing::views({&t});
  YoloV5Decoder dec({0, 2});
  Detections got;
  dec.decode(outs, 1, {0.25f, 640, 640}, got);
  expect_same(got, {{75, 85, 125, 115, 0.8f * 0.5f, 0}, {16, 16, 24, 24, 0.5f, 1}, {56, 56, 64, 64, 0.25f, 0}});
  got.clear();
  dec.decode(outs, 0, {0.25f, 640, 640}, got);
  expect_same(got, {{25, 25, 35, 35, 0.9f * 0.9f, 0}});
}

TEST(DecoderYoloV5, ReadsTheHeadFromItsOutputIndex) {
  Tensor grid = filled({1, 3, 2, 2, 7}, 0.9f);  // an old export's extra per-level output
  Tensor head = filled({1, 4, 7});
  float v[7] = {10, 10, 4, 4, 0.9f, 0.f, 0.9f};
  for (int k = 0; k < 7; ++k) at(head, {0, 2, k}) = v[k];
  auto outs = testing::views({&grid, &head});
  Detections got;
  YoloV5Decoder({1, 2}).decode(outs, 0, {0.25f, 64, 64}, got);
  expect_same(got, {{8, 8, 12, 12, 0.9f * 0.9f, 1}});
}

}  // namespace
}  // namespace sd
