#include <gtest/gtest.h>

#include <opencv2/videoio.hpp>
#include <nlohmann/json.hpp>

#include "sinks/annotate.h"
#include "sinks/jsonl_sink.h"
#include "sinks/video_sink.h"
#include "test_util.h"

namespace sd {
namespace {

TEST(JsonlSink, OneLinePerFrameInTheDocumentedShape) {
  test::TempDir dir;
  auto sink = JsonlSink::open(dir.file("d.jsonl"), {"clip \"1\".mp4"}, {"person", "bicycle", "car"});
  ASSERT_TRUE(sink);
  ASSERT_TRUE((*sink)->start());
  FrameResult r;
  r.frame.index = 12;
  r.frame.timestamp_ms = 400.0;
  r.detections = {{10.25f, 20.5f, 110.f, 220.75f, 0.91234f, 2}, {1, 2, 3, 4, 0.5f, 7}};
  ASSERT_TRUE((*sink)->write(r));
  r.frame.index = 13;
  r.detections.clear();
  ASSERT_TRUE((*sink)->write(r));
  ASSERT_TRUE((*sink)->finish());
  std::string text = test::read_file(dir.file("d.jsonl"));
  auto first_nl = text.find('\n');
  ASSERT_NE(first_nl, std::string::npos);
  auto j = nlohmann::json::parse(text.substr(0, first_nl));
  EXPECT_EQ(j["source"], "clip \"1\".mp4");
  EXPECT_EQ(j["frame"], 12);
  EXPECT_DOUBLE_EQ(j["timestamp_ms"].get<double>(), 400.0);
  ASSERT_EQ(j["detections"].size(), 2u);
  auto d = j["detections"][0];
  EXPECT_NEAR(d["box"][0].get<double>(), 10.25, 0.06);
  EXPECT_NEAR(d["box"][3].get<double>(), 220.75, 0.06);
  EXPECT_EQ(d["class_id"], 2);
  EXPECT_EQ(d["class_name"], "car");
  EXPECT_NEAR(d["confidence"].get<double>(), 0.9123, 1e-4);
  EXPECT_EQ(j["detections"][1]["class_name"], "7");  // no name for class 7: its id
  auto j2 = nlohmann::json::parse(text.substr(first_nl + 1));
  EXPECT_EQ(j2["frame"], 13);
  EXPECT_TRUE(j2["detections"].empty());
}

TEST(JsonlSink, UnwritablePathFailsAtOpen) {
  auto sink = JsonlSink::open("/nonexistent-dir/x.jsonl", {"s"}, {});
  ASSERT_FALSE(sink);
  EXPECT_EQ(sink.error().code, ErrorCode::kOutput);
  EXPECT_NE(sink.error().message.find("/nonexistent-dir/x.jsonl"), std::string::npos);
}

TEST(VideoSink, KeepsFpsSizeAndFrameCount) {
  test::TempDir dir;
  for (const char* name : {"v.mp4", "v.avi"}) {
    auto sink = VideoSink::open(dir.file(name), 12.5, 160, 120);
    ASSERT_TRUE(sink) << sink.error().message;
    FrameResult r;
    for (int i = 0; i < 15; ++i) {
      r.frame.image = test::numbered_frame(i);
      ASSERT_TRUE((*sink)->write(r));
    }
    ASSERT_TRUE((*sink)->finish());
    cv::VideoCapture cap(dir.file(name), cv::CAP_FFMPEG);
    ASSERT_TRUE(cap.isOpened()) << name;
    EXPECT_NEAR(cap.get(cv::CAP_PROP_FPS), 12.5, 0.01) << name;
    EXPECT_EQ(cap.get(cv::CAP_PROP_FRAME_WIDTH), 160) << name;
    int n = 0;
    cv::Mat f;
    while (cap.read(f)) ++n;
    EXPECT_EQ(n, 15) << name;
  }
}

TEST(VideoSink, UnwritablePathFailsAtOpen) {
  auto sink = VideoSink::open("/nonexistent-dir/out.mp4", 25, 64, 48);
  ASSERT_FALSE(sink);
  EXPECT_EQ(sink.error().code, ErrorCode::kOutput);
  EXPECT_NE(sink.error().message.find("/nonexistent-dir/out.mp4"), std::string::npos);
}

TEST(Annotate, DrawsBoxesInAStableColourPerClass) {
  EXPECT_EQ(class_colour(3), class_colour(3));
  EXPECT_NE(class_colour(0), class_colour(1));
  cv::Mat img(100, 100, CV_8UC3, cv::Scalar::all(0));
  draw_detections(img, {{20, 30, 80, 90, 0.9f, 1}}, {"a", "b"});
  cv::Vec3b edge = img.at<cv::Vec3b>(60, 20);  // on the left edge of the box
  cv::Scalar c = class_colour(1);
  EXPECT_NEAR(edge[0], c[0], 40);
  EXPECT_NEAR(edge[1], c[1], 40);
  EXPECT_NEAR(edge[2], c[2], 40);
  EXPECT_EQ(img.at<cv::Vec3b>(60, 50), cv::Vec3b(0, 0, 0));  // inside stays untouched
}

}  // namespace
}  // namespace sd
