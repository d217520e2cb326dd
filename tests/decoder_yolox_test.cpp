#include <cmath>

#include "postprocess/yolox_decoder.h"
#include "postprocess_test_util.h"

namespace sd {
namespace {

using testing::at;
using testing::expect_same;
using testing::filled;

TEST(DecoderYoloX, GridCellsFollowTheStrides) {
  EXPECT_EQ(grid_cells(640, 640, {8, 16, 32}), 8400);
  EXPECT_EQ(grid_cells(416, 416, {8, 16, 32}), 3549);
  EXPECT_EQ(grid_cells(64, 32, {8, 16, 32}), 8 * 4 + 4 * 2 + 2 * 1);
  EXPECT_EQ(grid_cells(0, 640, {8, 16, 32}), -1);
}

// 64x64 input: levels 8x8 (stride 8), 4x4 (stride 16), 2x2 (stride 32) = 84 anchors.
TEST(DecoderYoloX, DecodesGridOffsetsWithTheLevelStride) {
  Tensor t = filled({2, 84, 5 + 2}, 0.f);
  auto put = [&](int b, int a, std::array<float, 7> v) {
    for (int k = 0; k < 7; ++k) at(t, {b, a, k}) = v[static_cast<size_t>(k)];
  };
  // Level 1 (stride 16), cell gx = 2, gy = 1 -> anchor 64 + 1 * 4 + 2 = 70.
  put(1, 70, {0.5f, 0.25f, 0.f, 0.f, 0.9f, 0.2f, 0.8f});
  // Level 2 (stride 32), cell gx = 1, gy = 1 -> anchor 64 + 16 + 3 = 83; w = exp(ln 2) * 32.
  put(1, 83, {0.f, 0.f, std::log(2.f), 0.f, 0.5f, 0.6f, 0.f});
  // Level 0 (stride 8), cell gx = 3, gy = 0 -> anchor 3, in image 0 only.
  put(0, 3, {0.f, 0.f, 0.f, 0.f, 1.f, 1.f, 0.f});
  auto outs = testing::views({&t});
  YoloXHead head;
  head.num_classes = 2;
  head.input_width = head.input_height = 64;
  YoloXDecoder dec(head);
  Detections got;
  dec.decode(outs, 1, {0.25f, 0, 0}, got);
  const float w83 = std::exp(std::log(2.f)) * 32.f;
  expect_same(got, {{32, 12, 48, 28, 0.9f * 0.8f, 1}, {32 - 0.5f * w83, 16, 32 + 0.5f * w83, 48, 0.5f * 0.6f, 0}});
  got.clear();
  dec.decode(outs, 0, {0.25f, 0, 0}, got);
  expect_same(got, {{20, -4, 28, 4, 1.f, 0}});
}

TEST(DecoderYoloX, AnInputSizeThatDoesNotMatchTheAnchorsGivesNothing) {
  Tensor t = filled({1, 84, 7}, 0.9f);
  auto outs = testing::views({&t});
  YoloXHead head;
  head.num_classes = 2;
  Detections got;
  YoloXDecoder(head).decode(outs, 0, {0.25f, 128, 128}, got);
  EXPECT_TRUE(got.empty());
  YoloXDecoder(head).decode(outs, 0, {0.25f, 64, 64}, got);
  EXPECT_EQ(got.size(), 84u);
}

}  // namespace
}  // namespace sd
