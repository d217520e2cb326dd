#include "postprocess/end2end_decoder.h"
#include "postprocess_test_util.h"

namespace sd {
namespace {

using testing::at;
using testing::expect_same;
using testing::filled;

TEST(DecoderEnd2End, ReadsRowsOfTheRequestedImageAboveTheThreshold) {
  Tensor t = filled({2, 4, 6});  // zero rows are padding
  float rows[3][6] = {{10, 20, 30, 40, 0.9f, 2}, {50, 60, 70, 80, 0.25f, 0}, {1, 2, 3, 4, 0.2f, 5}};
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < 6; ++i) at(t, {1, k, i}) = rows[k][i];
  at(t, {0, 0, 4}) = 0.7f;
  auto outs = testing::views({&t});
  End2EndDecoder dec({0, false, 80});
  EXPECT_TRUE(dec.nms_in_model());
  EXPECT_EQ(dec.num_classes(), 80);
  Detections got;
  dec.decode(outs, 1, {0.25f, 640, 640}, got);
  expect_same(got, {{10, 20, 30, 40, 0.9f, 2}, {50, 60, 70, 80, 0.25f, 0}});
  got.clear();
  dec.decode(outs, 0, {0.25f, 640, 640}, got);
  expect_same(got, {{0, 0, 0, 0, 0.7f, 0}});
}

TEST(DecoderEnd2End, ReadsTheBatchColumnForm) {
  // YOLOv7 end2end (ONNX Runtime): batch, x1, y1, x2, y2, class, score.
  Tensor t = filled({3, 7});
  float rows[3][7] = {{0, 1, 2, 3, 4, 7, 0.8f}, {1, 5, 6, 7, 8, 3, 0.6f}, {1, 9, 9, 9, 9, 1, 0.1f}};
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < 7; ++i) at(t, {k, i}) = rows[k][i];
  auto outs = testing::views({&t});
  End2EndDecoder dec({0, true, 0});
  Detections got;
  dec.decode(outs, 1, {0.25f, 640, 640}, got);
  expect_same(got, {{5, 6, 7, 8, 0.6f, 3}});
}

}  // namespace
}  // namespace sd
