// The one redaction (core/uri_redaction.h): a password in a URI is replaced wherever the URI
// stands in a text, split as the program reading the URI splits it, and nothing else changes.
#include <gtest/gtest.h>

#include "core/uri_redaction.h"

namespace sd {
namespace {

TEST(UriRedaction, PasswordsInUrisAreHidden) {
  EXPECT_EQ(without_password("rtsp://admin:hunter2@10.0.0.5:554/stream"), "rtsp://admin:***@10.0.0.5:554/stream");
  EXPECT_EQ(without_password("http://user:pw@host"), "http://user:***@host");
  EXPECT_EQ(without_password("redis://token@host:6379/s"), "redis://***@host:6379/s");
  EXPECT_EQ(without_password("redis://:token@host:6379/s"), "redis://:***@host:6379/s");
  EXPECT_EQ(without_password("redis://alice:token@host/s?group=g"), "redis://alice:***@host/s?group=g");
  EXPECT_EQ(without_password("rtsp://cam/a@b"), "rtsp://cam/a@b");
  EXPECT_EQ(without_password("samples/clip.mp4"), "samples/clip.mp4");
  EXPECT_EQ(without_password(""), "");
  EXPECT_EQ(without_password("://x@y"), "://x@y");
}

TEST(UriRedaction, UserinfoIsSplitAsItsReaderSplitsIt) {
  // Redis: userinfo runs to the last '@' (a generated password may hold '/', '?', '#' and '@').
  EXPECT_EQ(without_password("redis://:a/b?c#d@e@db/s"), "redis://:***@db/s");
  EXPECT_EQ(without_password("REDIS://:p w@db/s"), "REDIS://:***@db/s");
  // FFmpeg: to the last '@' before the path.
  EXPECT_EQ(without_password("http://u:p@ss@host/a@b"), "http://u:***@host/a@b");
  EXPECT_EQ(without_password("rtsp://u:pw@cam?x@y"), "rtsp://u:***@cam?x@y");
}

TEST(UriRedaction, EveryUriInAMessageOrPipeline) {
  EXPECT_EQ(without_password("cannot open stream http://u:pw@host:8080/live: Connection refused"),
            "cannot open stream http://u:***@host:8080/live: Connection refused");
  EXPECT_EQ(without_password("rtspsrc location=rtsp://u:pw@cam/1 ! decodebin ! appsink"),
            "rtspsrc location=rtsp://u:***@cam/1 ! decodebin ! appsink");
  EXPECT_EQ(without_password("a http://x:1@h1 and rtsp://y:2@h2 here [tcp @ 0x5]"), "a http://x:***@h1 and rtsp://y:***@h2 here [tcp @ 0x5]");
  // Redacting twice changes nothing more.
  const std::string once = without_password("stream http://u:pw@host: [tcp @ 0x55] refused");
  EXPECT_EQ(once, "stream http://u:***@host: [tcp @ 0x55] refused");
  EXPECT_EQ(without_password(once), once);
}

}  // namespace
}  // namespace sd
