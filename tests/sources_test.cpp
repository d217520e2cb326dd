#include <gtest/gtest.h>

#include <fstream>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/videoio.hpp>

#include "sources/source.h"
#include "test_util.h"

namespace sd {
namespace {

std::vector<double> read_indices(Source& src, int& corrupt, int& frames) {
  std::vector<double> indices;
  Frame f;
  corrupt = frames = 0;
  while (true) {
    auto r = src.read(f);
    if (!r) {
      EXPECT_EQ(r.error().code, ErrorCode::kCorruptFrame) << r.error().message;
      if (r.error().code != ErrorCode::kCorruptFrame) break;
      ++corrupt;
      continue;
    }
    if (!*r) break;
    ++frames;
    indices.push_back(static_cast<double>(f.index));
  }
  return indices;
}

TEST(Sources, VideoFileReadsEveryFrameWithTimestamps) {
  test::TempDir dir;
  test::write_numbered_avi(dir.file("a.avi"), 12, 10);
  auto src = open_source(dir.file("a.avi"));
  ASSERT_TRUE(src) << src.error().message;
  const SourceInfo& info = (*src)->info();
  EXPECT_EQ(info.kind, SourceKind::kVideoFile);
  EXPECT_FALSE(info.live);
  EXPECT_EQ(info.frame_count, 12);
  EXPECT_NEAR(info.fps, 10, 1e-6);
  EXPECT_EQ(info.width, 160);
  Frame f;
  for (int i = 0; i < 12; ++i) {
    auto r = (*src)->read(f);
    ASSERT_TRUE(r && *r);
    EXPECT_EQ(f.index, i);
    EXPECT_NEAR(f.timestamp_ms, i * 100.0, 1e-6);
    EXPECT_EQ(f.image.type(), CV_8UC3);
  }
  auto end = (*src)->read(f);
  ASSERT_TRUE(end);
  EXPECT_FALSE(*end);
}

TEST(Sources, Yuv420VideoStaysI420AndMatchesOpenCvsDecode) {
  test::TempDir dir;
  test::write_numbered_mp4(dir.file("v.mp4"), 12, 25, {160, 120});
  auto src = open_source(dir.file("v.mp4"));
  ASSERT_TRUE(src) << src.error().message;
  EXPECT_EQ((*src)->info().frame_count, 12);
  EXPECT_NEAR((*src)->info().fps, 25, 1e-6);
  cv::VideoCapture opencv(dir.file("v.mp4"), cv::CAP_FFMPEG);
  ASSERT_TRUE(opencv.isOpened());
  Frame f;
  cv::Mat want;
  for (int i = 0; i < 12; ++i) {
    auto r = (*src)->read(f);
    ASSERT_TRUE(r && *r);
    EXPECT_EQ(f.format, PixelFormat::kI420);  // no BGR conversion on the reader thread
    EXPECT_EQ(f.size(), cv::Size(160, 120));
    EXPECT_EQ(f.index, i);
    EXPECT_NEAR(f.timestamp_ms, i * 40.0, 1e-6);
    ASSERT_TRUE(opencv.read(want));
    // The same picture as OpenCV's capture gives, once converted: same decoder, same BT.601
    // matrix; swscale's integer tables round up to 2 levels higher than cvtColor's.
    EXPECT_LE(cv::norm(f.bgr(), want, cv::NORM_INF), 3.0) << "frame " << i;
  }
  auto end = (*src)->read(f);
  ASSERT_TRUE(end);
  EXPECT_FALSE(*end);
}

TEST(Sources, AReusedFrameTakesTheFormatOfEachSource) {
  // Packets are pooled across sources: a frame that held I420 from one source and is then
  // filled by a BGR source must read as BGR (and the other way round).
  test::TempDir dir;
  test::write_numbered_mp4(dir.file("v.mp4"), 2, 10, {160, 120});
  test::write_numbered_avi(dir.file("a.avi"), 2, 10, {200, 100});
  auto yuv = open_source(dir.file("v.mp4"));
  auto bgr = open_source(dir.file("a.avi"));
  auto synth = open_source("synth:w=96,h=64,frames=2");
  ASSERT_TRUE(yuv && bgr && synth);
  Frame f;
  ASSERT_TRUE(*(*yuv)->read(f));
  EXPECT_EQ(f.format, PixelFormat::kI420);
  ASSERT_TRUE(*(*bgr)->read(f));
  EXPECT_EQ(f.format, PixelFormat::kBgr);
  EXPECT_EQ(f.size(), cv::Size(200, 100));
  ASSERT_TRUE(*(*yuv)->read(f));
  EXPECT_EQ(f.format, PixelFormat::kI420);
  ASSERT_TRUE(*(*synth)->read(f));
  EXPECT_EQ(f.format, PixelFormat::kBgr);
  EXPECT_EQ(f.size(), cv::Size(96, 64));
}

TEST(Sources, TruncatedVideoEndsEarlyWithoutACrash) {
  test::TempDir dir;
  test::write_numbered_mp4(dir.file("v.mp4"), 30, 10, {160, 120});
  std::string data = test::read_file(dir.file("v.mp4"));
  // Keep the header and the first part of the media data.
  std::ofstream(dir.file("cut.mp4"), std::ios::binary) << data.substr(0, data.size() / 2);
  auto src = open_source(dir.file("cut.mp4"));
  if (!src) {
    // No index at the end (mp4v writes its moov last): a clear error naming the file.
    EXPECT_EQ(src.error().code, ErrorCode::kSource);
    EXPECT_NE(src.error().message.find("cut.mp4"), std::string::npos);
    return;
  }
  int corrupt = 0, frames = 0;
  read_indices(**src, corrupt, frames);
  EXPECT_LT(frames, 30);
}

TEST(Sources, CorruptFrameInTheMiddleIsReportedAndSkipped) {
  test::TempDir dir;
  test::write_numbered_avi(dir.file("c.avi"), 20);
  test::corrupt_mjpeg_frame(dir.file("c.avi"), 10);
  auto src = open_source(dir.file("c.avi"));
  ASSERT_TRUE(src);
  int corrupt = 0, frames = 0;
  auto indices = read_indices(**src, corrupt, frames);
  EXPECT_EQ(corrupt, 1);
  EXPECT_EQ(frames, 19);
  // Indices stay true to the file: frame 10 is missing, 11 is still 11.
  ASSERT_EQ(indices.size(), 19u);
  EXPECT_EQ(indices[9], 9);
  EXPECT_EQ(indices[10], 11);
}

TEST(Sources, ImageFolderSortedAndCorruptImageSkipped) {
  test::TempDir dir;
  for (int i = 0; i < 3; ++i) cv::imwrite(dir.file("img" + std::to_string(i) + ".png"), test::numbered_frame(i));
  std::ofstream(dir.file("img1b.jpg")) << "this is not a jpeg";
  std::ofstream(dir.file("notes.txt")) << "ignored";
  auto src = open_source(dir.path().string());
  ASSERT_TRUE(src) << src.error().message;
  EXPECT_EQ((*src)->info().kind, SourceKind::kImages);
  EXPECT_EQ((*src)->info().frame_count, 4);
  int corrupt = 0, frames = 0;
  read_indices(**src, corrupt, frames);
  EXPECT_EQ(frames, 3);
  EXPECT_EQ(corrupt, 1);
}

TEST(Sources, GlobAndSingleImage) {
  test::TempDir dir;
  for (int i = 0; i < 4; ++i) cv::imwrite(dir.file("f" + std::to_string(i) + ".jpg"), test::numbered_frame(i));
  auto glob = open_source(dir.file("f[12].jpg"));
  ASSERT_TRUE(glob) << glob.error().message;
  EXPECT_EQ((*glob)->info().frame_count, 2);
  auto one = open_source(dir.file("f3.jpg"));
  ASSERT_TRUE(one);
  EXPECT_EQ((*one)->info().frame_count, 1);
  EXPECT_EQ((*one)->info().width, 160);
}

TEST(Sources, ClearErrorsForMissingAndUnreadableSources) {
  test::TempDir dir;
  auto missing = open_source(dir.file("nope.mp4"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kSource);
  EXPECT_NE(missing.error().message.find("nope.mp4"), std::string::npos);
  EXPECT_NE(missing.error().message.find("does not exist"), std::string::npos);

  std::ofstream(dir.file("garbage.mp4")) << std::string(5000, 'x');
  auto garbage = open_source(dir.file("garbage.mp4"));
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().code, ErrorCode::kSource);
  EXPECT_NE(garbage.error().message.find("garbage.mp4"), std::string::npos);

  std::ofstream(dir.file("bad.png")) << "not a png";
  auto bad_image = open_source(dir.file("bad.png"));
  ASSERT_FALSE(bad_image);
  EXPECT_EQ(bad_image.error().code, ErrorCode::kSource);

  auto no_match = open_source(dir.file("*.jpg"));
  ASSERT_FALSE(no_match);
  EXPECT_NE(no_match.error().message.find("matches no file"), std::string::npos);

  auto empty_dir = open_source(dir.path().string() + "/");
  ASSERT_FALSE(empty_dir);
}

TEST(Sources, MissingCameraIsASourceError) {
  auto cam = open_source("/dev/video99");
  ASSERT_FALSE(cam);
  EXPECT_EQ(cam.error().code, ErrorCode::kSource);
  EXPECT_NE(cam.error().message.find("/dev/video99"), std::string::npos);
}

}  // namespace
}  // namespace sd
