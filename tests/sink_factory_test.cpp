// The sink factory: the kind of output from the option or the name, per-source video files, and
// a clear refusal for a name that says no kind of output.
#include <gtest/gtest.h>

#include <filesystem>

#include "sinks/sink_factory.h"
#include "test_util.h"

namespace sd {
namespace {

SinkContext two_sources() {
  SinkContext c;
  c.sources = {{"cam/a.mp4", 10, 64, 48}, {"cam/b.mp4", 10, 32, 32}};
  c.class_names = {"person"};
  return c;
}

TEST(SinkFactory, TheKindComesFromTheNameForSink) {
  test::TempDir dir;
  auto jsonl = open_sink({"--sink", dir.file("d.jsonl")}, two_sources());
  ASSERT_TRUE(jsonl) << jsonl.error().message;
  EXPECT_FALSE((*jsonl)->wants_drawn_frame());
  auto video = open_sink({"--sink", dir.file("v.mkv")}, two_sources());
  ASSERT_TRUE(video) << video.error().message;
  EXPECT_TRUE((*video)->wants_drawn_frame());
  EXPECT_TRUE((*video)->finish());
}

TEST(SinkFactory, ANameOfNoKnownKindIsAUsageErrorNamingIt) {
  auto r = open_sink({"--sink", "out.txt"}, two_sources());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUsage);
  EXPECT_NE(r.error().message.find("--sink out.txt"), std::string::npos) << r.error().message;
  EXPECT_FALSE(check_sink_targets({{"-d", "x.jsonl", SinkTarget::Kind::kJsonl}, {"--sink", "out.txt"}}));
}

TEST(SinkFactory, TheOptionDecidesTheKindForDashOAndDashD) {
  test::TempDir dir;
  // -d takes any name as JSON Lines; -o insists on a video name (as before the factory).
  auto d = open_sink({"-d", dir.file("dets.txt"), SinkTarget::Kind::kJsonl}, two_sources());
  ASSERT_TRUE(d) << d.error().message;
  auto o = open_sink({"-o", dir.file("out.txt"), SinkTarget::Kind::kVideo}, two_sources());
  ASSERT_FALSE(o);
  EXPECT_EQ(o.error().code, ErrorCode::kOutput);
}

TEST(SinkFactory, AVideoTargetNamesOneFilePerSource) {
  auto files = sink_files({"-o", "out.mp4", SinkTarget::Kind::kVideo}, {"a.mp4", "b.mp4"});
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].path, "out_0.mp4");
  EXPECT_EQ(files[1].path, "out_1.mp4");
  EXPECT_EQ(files[0].option, "-o");
  EXPECT_EQ(sink_files({"--sink", "d.jsonl"}, {"a.mp4", "b.mp4"}).size(), 1u);
}

TEST(SinkFactory, AFrameGoesToItsOwnSourcesVideo) {
  test::TempDir dir;
  auto sink = open_sink({"-o", dir.file("v.avi"), SinkTarget::Kind::kVideo}, two_sources());
  ASSERT_TRUE(sink) << sink.error().message;
  FrameResult r;
  r.frame.image = cv::Mat(32, 32, CV_8UC3, cv::Scalar(0, 0, 0));
  r.frame.source_id = 1;
  ASSERT_TRUE((*sink)->write(r));
  r.frame.source_id = 2;  // no such source
  auto bad = (*sink)->write(r);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInternal);
  ASSERT_TRUE((*sink)->finish());
  EXPECT_TRUE(std::filesystem::exists(dir.file("v_1.avi")));
}

}  // namespace
}  // namespace sd
