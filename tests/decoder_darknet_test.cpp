#include <cmath>

#include "postprocess/darknet_decoder.h"
#include "postprocess/decoder_util.h"
#include "postprocess_test_util.h"

namespace sd {
namespace {

using detail::sigmoid;
using testing::at;
using testing::expect_same;
using testing::filled;

constexpr int kClasses = 2, kEntries = 5 + kClasses;

// Sets anchor n of cell (i, j) of a [N, na*(5+nc), H, W] layer.
void put(Tensor& t, int b, int n, int i, int j, std::array<float, kEntries> v) {
  for (int k = 0; k < kEntries; ++k) at(t, {b, n * kEntries + k, j, i}) = v[static_cast<size_t>(k)];
}

// 64x64 network: a coarse 2x2 layer (stride 32, big anchors) and a fine 4x4 layer (stride 16).
DarknetHead two_layer_head(int coarse_output, int fine_output) {
  DarknetHead h;
  h.num_classes = kClasses;
  h.input_width = h.input_height = 64;
  h.layers = {{coarse_output, {40, 50, 60, 30}, 1.f, false}, {fine_output, {8, 10, 12, 6}, 1.f, false}};
  return h;
}

TEST(DecoderDarknet, DecodesRawLogitsWithTheMaskedAnchors) {
  Tensor coarse = filled({2, 2 * kEntries, 2, 2}, -10.f), fine = filled({2, 2 * kEntries, 4, 4}, -10.f);
  const float obj = std::log(0.9f / 0.1f), cls = 2.f;
  // Coarse layer, anchor 1 (60x30), cell (1, 0): centre offsets 0 -> sigmoid 0.5.
  put(coarse, 1, 1, 1, 0, {0, 0, 0, 0, obj, -5, cls});
  // Fine layer, anchor 0 (8x10), cell (2, 3): w = exp(ln 2) * 8.
  put(fine, 1, 0, 2, 3, {0, 0, std::log(2.f), 0, obj, cls, -5});
  // Objectness too low: skipped even with a sure class.
  put(fine, 1, 1, 0, 0, {0, 0, 0, 0, -3, 10, 10});
  auto outs = testing::views({&fine, &coarse});  // engine order differs from the cfg order
  DarknetDecoder dec(two_layer_head(1, 0));
  Detections got;
  dec.decode(outs, 1, {0.25f, 0, 0}, got);
  const float score = sigmoid(obj) * sigmoid(cls);
  const float w_fine = std::exp(std::log(2.f)) * 8.f;
  expect_same(got, {{48 - 30, 16 - 15, 48 + 30, 16 + 15, score, 1},
                    {40 - 0.5f * w_fine, 56 - 5, 40 + 0.5f * w_fine, 56 + 5, score, 0}});
  got.clear();
  dec.decode(outs, 0, {0.25f, 0, 0}, got);
  EXPECT_TRUE(got.empty());
}

TEST(DecoderDarknet, ThresholdAppliesToObjectnessTimesClass) {
  Tensor coarse = filled({1, 2 * kEntries, 2, 2}, -10.f), fine = filled({1, 2 * kEntries, 4, 4}, -10.f);
  // sigmoid(0) * sigmoid(0) = 0.25: exactly at the threshold.
  put(coarse, 0, 0, 0, 0, {0, 0, 0, 0, 0, 0, -9});
  auto outs = testing::views({&coarse, &fine});
  DarknetDecoder dec(two_layer_head(0, 1));
  Detections got;
  dec.decode(outs, 0, {0.25f, 0, 0}, got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].score, 0.25f);
  got.clear();
  dec.decode(outs, 0, {std::nextafter(0.25f, 1.f), 0, 0}, got);
  EXPECT_TRUE(got.empty());
}

TEST(DecoderDarknet, AppliesScaleXYAndNewCoords) {
  Tensor coarse = filled({1, 2 * kEntries, 2, 2}, 0.f), fine = filled({1, 2 * kEntries, 4, 4}, 0.f);
  // new_coords: values are already logistic; w = tw^2 * 4 * anchor.
  put(coarse, 0, 0, 1, 1, {0.75f, 0.5f, 0.5f, 0.25f, 0.8f, 0.1f, 0.9f});
  auto outs = testing::views({&coarse, &fine});
  DarknetHead h = two_layer_head(0, 1);
  h.layers[0].new_coords = true, h.layers[0].scale_x_y = 2.f;
  h.layers[1].new_coords = true;  // all zero there: objectness 0 fails
  DarknetDecoder dec(h);
  Detections got;
  dec.decode(outs, 0, {0.25f, 0, 0}, got);
  // bx = (1 + 0.75 * 2 - 0.5) * 32 = 64, by = (1 + 0.5 * 2 - 0.5) * 32 = 48; w = 0.25 * 4 * 40, h = 0.0625 * 4 * 50.
  expect_same(got, {{64 - 20, 48 - 6.25f, 64 + 20, 48 + 6.25f, 0.8f * 0.9f, 1}});
}

}  // namespace
}  // namespace sd
