// The device frame pool (core/device_frame.h) with fake "device" memory in the host's: buffers
// allocated only up to the pool's bound and then reused, a handle shared by copies going back with
// its last holder, a full pool making the decoder wait until a frame comes back (and failing,
// not hanging, when none does), frames outliving their pool; and Frame::to_host downloading a
// device frame once.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "core/device_frame.h"
#include "core/frame.h"
#include "fake_device_frames.h"

namespace sd {
namespace {

using test::FakeDeviceCounts;
using test::FakeDeviceMemory;

std::shared_ptr<DeviceFramePool> pool_of(int capacity, const std::shared_ptr<FakeDeviceCounts>& counts, int w = 64, int h = 32) {
  return DeviceFramePool::create(std::make_unique<FakeDeviceMemory>(counts), w, h, capacity);
}

TEST(DeviceFramePool, AllocatesOnlyWhatIsHeldAtOnceAndReusesIt) {
  auto counts = std::make_shared<FakeDeviceCounts>();
  auto pool = pool_of(4, counts);
  std::vector<const uint8_t*> seen;
  std::vector<DeviceFrameRef> held;
  for (int i = 0; i < 100; ++i) {
    auto f = pool->acquire(i);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->pts(), i);
    EXPECT_EQ(f->nv12().width, 64);
    EXPECT_EQ(f->nv12().chroma, f->nv12().luma + f->nv12().pitch * 32);
    seen.push_back(f->nv12().luma);
    held.push_back(std::move(*f));
    if (held.size() == 2) held.erase(held.begin());  // a consumer two frames behind
  }
  EXPECT_EQ(counts->allocations.load(), 2) << "two frames held at most: two buffers, reused 100 times, none per frame";
  EXPECT_EQ(pool->allocated(), 2);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::unique(seen.begin(), seen.end()) - seen.begin(), 2);
  held.clear();
  EXPECT_EQ(pool->held(), 0);
}

TEST(DeviceFramePool, ASharedFrameGoesBackWithItsLastHolder) {
  auto counts = std::make_shared<FakeDeviceCounts>();
  auto pool = pool_of(1, counts);
  auto f = pool->acquire(7);
  ASSERT_TRUE(f);
  DeviceFrameRef copy = *f;  // e.g. the decoder's frame and the pipeline's
  EXPECT_EQ(copy.holders(), 2);
  EXPECT_EQ(copy.pts(), 7);
  f->reset();
  EXPECT_EQ(pool->held(), 1) << "still held by the copy";
  DeviceFrameRef moved = std::move(copy);
  EXPECT_FALSE(copy);
  EXPECT_EQ(pool->held(), 1);
  moved.reset();
  EXPECT_EQ(pool->held(), 0);
  auto again = pool->acquire(8);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(counts->allocations.load(), 1);
}

TEST(DeviceFramePool, AFullPoolMakesTheDecoderWaitUntilAFrameComesBack) {
  auto counts = std::make_shared<FakeDeviceCounts>();
  auto pool = pool_of(2, counts);
  auto a = pool->acquire(0), b = pool->acquire(1);
  ASSERT_TRUE(a && b);
  const uint8_t* a_buffer = a->nv12().luma;
  Result<DeviceFrameRef> third = fail(ErrorCode::kInternal, "not yet");
  std::thread decoder([&] { third = pool->acquire(2); });
  while (pool->waiting() == 0) std::this_thread::yield();  // blocked: the pool is full
  EXPECT_FALSE(third) << "no third buffer while two are held";
  a->reset();  // the consumer lets one go
  decoder.join();
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(third->nv12().luma, a_buffer);
  EXPECT_EQ(third->pts(), 2);
  EXPECT_EQ(counts->allocations.load(), 2) << "back-pressure, not more memory";
}

TEST(DeviceFramePool, AConsumerThatNeverGivesBackIsAnErrorNotAHang) {
  auto counts = std::make_shared<FakeDeviceCounts>();
  auto pool = pool_of(1, counts);
  auto a = pool->acquire(0);
  ASSERT_TRUE(a);
  auto b = pool->acquire(1, 20);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("all 1 decoded frames on the GPU held"), std::string::npos) << b.error().message;
  EXPECT_EQ(b.error().code, ErrorCode::kSource) << "ends the source, not one lost frame";
  std::thread closer([&] {
    while (pool->waiting() == 0) std::this_thread::yield();
    pool->close();
  });
  auto c = pool->acquire(2);
  closer.join();
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::kInterrupted);
}

TEST(DeviceFramePool, FramesOutliveThePoolAndFreeItsMemoryLast) {
  auto counts = std::make_shared<FakeDeviceCounts>();
  auto pool = pool_of(3, counts);
  auto f = pool->acquire(0);
  ASSERT_TRUE(f);
  DeviceFrameRef frame = std::move(*f);
  pool.reset();  // the decoder is gone
  EXPECT_EQ(counts->frees.load(), 0);
  EXPECT_NE(frame.nv12().luma, nullptr);
  frame.reset();
  EXPECT_EQ(counts->frees.load(), 1);
}

// A device frame's pixels come down once, as the I420 the CPU decoder would have made.
TEST(DeviceFrame, ToHostDownloadsOnceAsI420) {
  auto counts = std::make_shared<FakeDeviceCounts>();
  auto pool = pool_of(2, counts, 64, 32);
  cv::Mat bgr(32, 64, CV_8UC3);
  cv::randu(bgr, 0, 255);
  cv::Mat i420;
  cv::cvtColor(bgr, i420, cv::COLOR_BGR2YUV_I420);
  auto ref = test::upload_i420(*pool, i420, 64, 32, 5);
  ASSERT_TRUE(ref) << ref.error().message;
  Frame frame;
  frame.device = *ref;
  frame.format = PixelFormat::kDeviceNv12;
  EXPECT_EQ(frame.size(), cv::Size(64, 32));
  cv::Mat scratch;
  const cv::Mat& shown = frame.bgr(scratch);  // a look without changing the frame
  EXPECT_EQ(shown.size(), cv::Size(64, 32));
  EXPECT_EQ(frame.format, PixelFormat::kDeviceNv12);
  EXPECT_EQ(counts->downloads.load(), 1);
  ASSERT_TRUE(frame.to_host());
  ASSERT_TRUE(frame.to_host());
  EXPECT_EQ(counts->downloads.load(), 2) << "to_host downloads once";
  EXPECT_EQ(pool->downloads(), 2);
  ASSERT_EQ(frame.format, PixelFormat::kI420);
  EXPECT_EQ(cv::norm(frame.yuv, i420, cv::NORM_INF), 0);
  EXPECT_EQ(frame.size(), cv::Size(64, 32));
  EXPECT_TRUE(frame.device) << "kept for the GPU letterbox until the frame is done";
}

}  // namespace
}  // namespace sd
