// GStreamer pipelines ending in appsink, driven through GStreamer's API. Tests skip only where
// GStreamer or one of the elements they use is not installed; any other failure fails them.
#include <gtest/gtest.h>
#include <gst/gst.h>
#include <unistd.h>

#include <filesystem>
#include <initializer_list>
#include <string>

#include "cli_util.h"
#include "core/error.h"
#include "sources/source.h"
#include "sources/supervised_source.h"

namespace sd {
namespace {

// Empty when every element is installed, else what is missing (the reason to skip).
std::string missing_elements(std::initializer_list<const char*> names) {
  if (!gst_init_check(nullptr, nullptr, nullptr)) return "GStreamer itself";
  std::string missing;
  for (const char* name : names) {
    GstElementFactory* f = gst_element_factory_find(name);
    if (f) gst_object_unref(f);
    else missing += std::string(missing.empty() ? "" : ", ") + name;
  }
  return missing;
}

#define REQUIRE_GST_ELEMENTS(...)                                                             \
  if (std::string missing = missing_elements({__VA_ARGS__}); !missing.empty())                \
  GTEST_SKIP() << "GStreamer element(s) not installed here: " << missing

int read_all(Source& src, int expect_width) {
  Frame f;
  int n = 0;
  while (true) {
    auto r = src.read(f);
    EXPECT_TRUE(r) << r.error().message;
    if (!r || !*r) break;
    EXPECT_EQ(f.image.cols, expect_width);
    EXPECT_EQ(f.index, n);
    ++n;
  }
  return n;
}

TEST(GStreamerSource, APipelineIsReadFrameByFrameLikeAFile) {
  REQUIRE_GST_ELEMENTS("videotestsrc", "videoconvert", "appsink");
  auto src = open_source("videotestsrc num-buffers=5 ! video/x-raw,width=64,height=48 ! videoconvert ! appsink");
  ASSERT_TRUE(src) << src.error().message;
  EXPECT_EQ((*src)->info().kind, SourceKind::kGStreamer);
  EXPECT_FALSE((*src)->info().live) << "a pipeline that prerolls is not live: no frame may be dropped";
  EXPECT_EQ((*src)->info().width, 64);
  EXPECT_EQ((*src)->info().height, 48);
  EXPECT_EQ(read_all(**src, 64), 5);
}

TEST(GStreamerSource, ALiveSourceIsMarkedLive) {
  REQUIRE_GST_ELEMENTS("videotestsrc", "videoconvert", "appsink");
  // Not reopened when it ends (--reconnect never): the test reads its three frames and its end.
  SourceOptions no_reconnect;
  no_reconnect.reconnect = false;
  auto src = open_source("videotestsrc is-live=true num-buffers=3 ! video/x-raw,width=32,height=32 ! videoconvert ! appsink", no_reconnect);
  ASSERT_TRUE(src) << src.error().message;
  EXPECT_TRUE((*src)->info().live);
  EXPECT_EQ(read_all(**src, 32), 3);
}

// The factory supervises live sources only, and none with --reconnect never.
TEST(GStreamerSource, OnlyLivePipelinesAreSupervised) {
  REQUIRE_GST_ELEMENTS("videotestsrc", "videoconvert", "appsink");
  const std::string live = "videotestsrc is-live=true ! video/x-raw,width=32,height=32 ! videoconvert ! appsink";
  auto supervised = [](const Result<std::unique_ptr<Source>>& s) {
    return s && dynamic_cast<const SupervisedSource*>(s->get()) != nullptr;
  };
  SourceOptions o;
  EXPECT_TRUE(supervised(open_source(live, o)));
  o.reconnect = false;
  EXPECT_FALSE(supervised(open_source(live, o)));
  o.reconnect = true;
  auto file = open_source("videotestsrc num-buffers=5 ! video/x-raw,width=32,height=32 ! videoconvert ! appsink", o);
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_FALSE(supervised(file)) << "a pipeline that prerolls is read like a file";
  EXPECT_FALSE(supervised(open_source("synth:w=32,h=32,frames=3,live=1", o)));
}

// Each bad pipeline fails at open with GStreamer's own reason, on one line.
void expect_refused(const std::string& pipeline, const std::string& mentions) {
  auto src = open_source(pipeline);
  ASSERT_FALSE(src) << pipeline;
  EXPECT_EQ(src.error().code, ErrorCode::kSource);
  const std::string& m = src.error().message;
  EXPECT_NE(m.find("GStreamer pipeline '" + pipeline + "'"), std::string::npos) << m;
  EXPECT_NE(m.find(mentions), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(GStreamerSource, BadPipelinesAreRefusedAtOpenWithGStreamersReason) {
  REQUIRE_GST_ELEMENTS("videotestsrc", "videoconvert", "appsink", "fakesink");
  expect_refused("videotestsrc pattern=nope ! appsink", "pattern");
  expect_refused("videotestsrc ! appsink ! fakesink", "could not link");
  expect_refused("videotestsrc ! ! appsink", "syntax error");
  expect_refused("nosuchelement ! appsink", "no element \"nosuchelement\"");
  expect_refused("videotestsrc num-buffers=3 ! video/x-raw,format=I420 ! appsink", "not-negotiated");
}

TEST(GStreamerSource, APipelineThatNeverStartsFailsAfterTwoSeconds) {
  REQUIRE_GST_ELEMENTS("fdsrc", "rawvideoparse", "appsink");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);  // nothing is ever written: the pipeline cannot preroll
  expect_refused("fdsrc fd=" + std::to_string(fds[0]) + " ! rawvideoparse width=8 height=8 format=bgr ! appsink",
                 "did not start within 2 s");
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(GStreamerSource, APipelineWithoutFramesSaysSo) {
  REQUIRE_GST_ELEMENTS("videotestsrc", "videoconvert", "appsink");
  auto src = open_source("videotestsrc num-buffers=0 ! videoconvert ! appsink");
  ASSERT_TRUE(src) << src.error().message;
  Frame f;
  auto r = (*src)->read(f);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kSource);
  EXPECT_NE(r.error().message.find("delivered no frame"), std::string::npos) << r.error().message;
}

TEST(GStreamerSource, APartialLastFrameIsLeftOutAndTheStreamEnds) {
  REQUIRE_GST_ELEMENTS("fdsrc", "rawvideoparse", "videoconvert", "appsink");
  // Two whole frames, then bytes that are not a frame: rawvideoparse drops the remainder, and the
  // pipeline ends after the two frames (EOS), not with a hang.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string bytes(8 * 8 * 3 * 2 + 7, '\x40');
  ASSERT_EQ(::write(fds[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fds[1]);
  auto src = open_source("fdsrc fd=" + std::to_string(fds[0]) + " ! rawvideoparse width=8 height=8 format=bgr ! appsink");
  ASSERT_TRUE(src) << src.error().message;
  EXPECT_EQ(read_all(**src, 8), 2);
  ::close(fds[0]);
}

// Through the binary: exit 4 and our one line, none of GStreamer's or GLib's own printing.
TEST(GStreamerSource, TheCliSaysOneLineAndExitsFour) {
  REQUIRE_GST_ELEMENTS("videotestsrc", "appsink", "fakesink");
  test::TempDir dir;
  for (const std::string pipeline : {"videotestsrc pattern=nope ! appsink", "videotestsrc ! appsink ! fakesink", "videotestsrc ! ! appsink"}) {
    test::CliResult r = test::run_cli(dir, {"run", "-m", test::kTinyModel, "-s", pipeline, "-q", "-d", dir.file("d.jsonl")});
    EXPECT_EQ(r.code, exit_code::kSource) << pipeline << ": " << r.err;
    auto lines = test::nonempty_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_EQ(lines[0].rfind("streamdet: error: GStreamer pipeline '" + pipeline + "': ", 0), 0u) << lines[0];
    EXPECT_FALSE(std::filesystem::exists(dir.file("d.jsonl")));
  }
}

}  // namespace
}  // namespace sd
