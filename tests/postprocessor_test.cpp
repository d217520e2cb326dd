#include <atomic>
#include <cstdlib>
#include <new>

#include "postprocess/coco_names.h"
#include "postprocess/end2end_decoder.h"
#include "postprocess/postprocessor.h"
#include "postprocess/yolov8_decoder.h"
#include "postprocess_test_util.h"

// Counts every operator new of the test process, so tests can assert that a steady-state frame
// allocates nothing. Sanitizer builds keep their own allocator and skip those checks.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SD_COUNT_ALLOCATIONS 0
#else
#define SD_COUNT_ALLOCATIONS 1
namespace {
std::atomic<int64_t> g_allocations{0};
}
void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace sd {
namespace testing {
int64_t allocation_count() {
#if SD_COUNT_ALLOCATIONS
  return g_allocations.load();
#else
  return -1;
#endif
}
}  // namespace testing

namespace {

using testing::at;
using testing::filled;

// A YOLOv8 head [1, 4+2, 6] holding three boxes: two overlapping class-0 boxes and one class-1
// box over the same place.
Tensor three_boxes() {
  Tensor t = filled({1, 6, 6}, 0.01f);
  auto put = [&](int a, float cx, float cy, float w, float h, int c, float s) {
    at(t, {0, 0, a}) = cx, at(t, {0, 1, a}) = cy, at(t, {0, 2, a}) = w, at(t, {0, 3, a}) = h;
    at(t, {0, 4 + c, a}) = s;
  };
  put(1, 50, 50, 20, 20, 0, 0.9f);
  put(3, 51, 50, 20, 20, 0, 0.8f);  // IoU ~0.9 with anchor 1: suppressed
  put(4, 50, 50, 20, 20, 1, 0.6f);  // other class: kept
  return t;
}

TEST(Postprocessor, DecodesThenSuppresses) {
  Tensor head = three_boxes();
  auto outs = testing::views({&head});
  Postprocessor post(std::make_unique<YoloV8Decoder>(YoloV8Head{0, 2, false}), {0.25f, 64, 64}, {0.45f, false, 300});
  Detections out;
  post.run(outs, 0, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].class_id, 0);
  EXPECT_FLOAT_EQ(out[0].score, 0.9f);
  EXPECT_FLOAT_EQ(out[0].x1, 40.f);
  EXPECT_EQ(out[1].class_id, 1);

  Postprocessor agnostic(std::make_unique<YoloV8Decoder>(YoloV8Head{0, 2, false}), {0.25f, 64, 64}, {0.45f, true, 300});
  agnostic.run(outs, 0, out);
  EXPECT_EQ(out.size(), 1u);
}

TEST(Postprocessor, SkipsNmsWhenTheModelRanItButHonoursMaxDet) {
  Tensor rows = filled({1, 3, 6});
  // Three overlapping rows of the same class: an end-to-end model already chose them.
  for (int k = 0; k < 3; ++k) {
    float v[6] = {10, 10, 50, 50, 0.9f - 0.1f * k, 2};
    for (int i = 0; i < 6; ++i) at(rows, {0, k, i}) = v[i];
  }
  auto outs = testing::views({&rows});
  Postprocessor post(std::make_unique<End2EndDecoder>(End2EndHead{0, false, 0}), {0.25f, 64, 64}, {0.45f, false, 2});
  Detections out;
  post.run(outs, 0, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FLOAT_EQ(out[1].score, 0.8f);
}

TEST(Postprocessor, DoesNotAllocateInSteadyState) {
  Tensor head = three_boxes();
  auto outs = testing::views({&head});
  Postprocessor post(std::make_unique<YoloV8Decoder>(YoloV8Head{0, 2, false}), {0.25f, 64, 64}, {0.45f, false, 300});
  Detections out;
  post.run(outs, 0, out);  // warm-up: buffers grow once
  const int64_t before = testing::allocation_count();
  if (before < 0) GTEST_SKIP() << "allocation counting is off in this build";
  for (int frame = 0; frame < 10; ++frame) post.run(outs, 0, out);
  EXPECT_EQ(testing::allocation_count() - before, 0);
  EXPECT_EQ(out.size(), 2u);
}

TEST(CocoNames, HasTheEightyClassesInTrainingOrder) {
  const auto& names = coco80_names();
  ASSERT_EQ(names.size(), 80u);
  EXPECT_EQ(names[0], "person");
  EXPECT_EQ(names[2], "car");
  EXPECT_EQ(names[16], "dog");
  EXPECT_EQ(names[62], "tv");
  EXPECT_EQ(names[79], "toothbrush");
}

}  // namespace
}  // namespace sd
