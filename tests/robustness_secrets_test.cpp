// Secrets stay secret: a password planted in source and sink URIs (a Redis stream behind
// requirepass, read with the password alone and with ":password"; an HTTP stream with
// user:password that is cut short, read by `run` and by `publish`) appears in no output of the
// run: not in stdout or stderr (the profile table, the cut-short warning), not in --profile-json,
// --report, --trace, the JSON Lines, the annotated videos or their names, and not in the frames
// `publish` sends or the detections the Redis sink writes.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <thread>

#include <hiredis/hiredis.h>
#include <opencv2/videoio.hpp>

#include "cli_util.h"
#include "core/error.h"
#include "redis_server.h"
#include "test_util.h"
#include "transport/redis_client.h"

namespace sd {
namespace {

namespace fs = std::filesystem;

// Serves files over HTTP/1.1 on loopback by path (404 for others), honouring "Range: bytes=N-",
// but never more than the first `cut` bytes of a file: every response declares the whole file and
// breaks off there, as a server that dies mid-transfer. One connection at a time; stops (and
// joins) when destroyed.
class LocalHttpServer {
 public:
  explicit LocalHttpServer(std::map<std::string, std::string> files, size_t cut = std::string::npos)
      : files_(std::move(files)), cut_(cut) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener_, 8) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~LocalHttpServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    ::close(listener_);
  }
  int port() const { return port_; }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept(listener_, nullptr, nullptr);
      if (c < 0) continue;
      answer(c);
      ::close(c);
    }
  }
  void answer(int c) {
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 2000) <= 0) return;
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return;
      request.append(buf, static_cast<size_t>(n));
    }
    const size_t path_start = request.find(' ') + 1;
    const auto file = files_.find(request.substr(path_start, request.find(' ', path_start) - path_start));
    if (file == files_.end()) return send_all(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    const std::string& body = file->second;
    size_t from = 0;
    if (const size_t r = request.find("Range: bytes="); r != std::string::npos) from = std::stoull(request.substr(r + 13));
    from = std::min(from, body.size());
    std::string head = from == 0 ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.1 206 Partial Content\r\n";
    head += "Accept-Ranges: bytes\r\nConnection: close\r\n";
    head += "Content-Length: " + std::to_string(body.size() - from) + "\r\n";
    if (from > 0) head += "Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(body.size() - 1) + "/" + std::to_string(body.size()) + "\r\n";
    head += "\r\n";
    const size_t end = std::min(cut_, body.size());
    if (from < end) head += body.substr(from, end - from);
    send_all(c, head);
  }
  static void send_all(int c, const std::string& bytes) {
    for (size_t sent = 0; sent < bytes.size();) {
      const ssize_t n = ::send(c, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  }

  std::map<std::string, std::string> files_;
  size_t cut_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(RobustnessSecrets, APasswordInSourceAndSinkUrisAppearsInNoOutput) {
  if (!test::redis_server_available()) GTEST_SKIP() << "no " << test::kRedisServerPath << " here (scripts/install-deps.sh installs it)";
  const std::string secret = "Planted-Pw-7q3x";
  test::RedisServer redis({.requirepass = secret});
  ASSERT_TRUE(redis.start());
  test::TempDir dir;
  {
    test::CliResult published = test::run_cli(
        dir, {"publish", "-s", std::string(STREAMDET_SOURCE_DIR) + "/samples/shapes_640x360.mp4", "--sink", redis.uri("frames"),
              "--fps", "max", "--max-frames", "4", "-q"});
    ASSERT_EQ(published.code, 0) << published.err;
  }
  test::write_numbered_avi(dir.file("clip.avi"), 40);
  const std::string avi = test::read_file(dir.file("clip.avi"));
  LocalHttpServer http({{"/clip.avi", avi}}, avi.size() * 6 / 10);
  ASSERT_GT(http.port(), 0);
  const std::string http_source = "http://viewer:" + secret + "@127.0.0.1:" + std::to_string(http.port()) + "/clip.avi";
  {
    // Published frames carry their source's name into Redis, and the worker's detections copy it.
    test::CliResult published = test::run_cli(dir, {"publish", "-s", http_source, "--sink", redis.uri("frames"), "--fps", "max", "-q"});
    ASSERT_EQ(published.code, exit_code::kDamagedSource) << published.err;
    EXPECT_EQ(published.err.find(secret), std::string::npos) << published.err;
  }

  const std::string host = "127.0.0.1:" + std::to_string(redis.port());
  fs::create_directory(dir.file("out"));
  auto out = [&](const std::string& name) { return dir.file("out/" + name); };
  test::SpawnOptions spawn;
  spawn.stdout_path = out("stdout.txt");
  test::CliResult r = test::run_cli(
      dir,
      {"run", "-m", test::kTinyModel, "--threads", "1", "--reconnect", "never", "-s", "redis://" + secret + "@" + host + "/frames?drain=1",
       "-s", http_source, "--sink", "redis://:" + secret + "@" + host + "/dets", "-d", out("d.jsonl"), "-o", out("v_{name}.mp4"),
       "--profile-json", out("p.json"), "--report", out("r.html"), "--trace", out("t.json")},
      spawn);
  // The HTTP stream was cut short (exit 7): its warning names it, with the password hidden.
  EXPECT_EQ(r.code, exit_code::kDamagedSource) << r.err;
  EXPECT_NE(r.err.find("http://viewer:***@127.0.0.1:" + std::to_string(http.port()) + "/clip.avi was cut short"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(secret), std::string::npos) << r.err;

  std::vector<std::string> written = test::list_dir(dir.file("out"));
  for (const char* expected : {"stdout.txt", "d.jsonl", "p.json", "r.html", "t.json"})
    EXPECT_NE(std::find(written.begin(), written.end(), expected), written.end()) << expected;
  EXPECT_GE(written.size(), 7u);  // and a video per source
  for (const std::string& name : written) {
    EXPECT_EQ(name.find(secret), std::string::npos) << name;
    EXPECT_EQ(test::read_file(out(name)).find(secret), std::string::npos) << name;
  }
  EXPECT_NE(test::read_file(out("p.json")).find("redis://***@" + host + "/frames"), std::string::npos);

  // The frames publish sent and the detections the sink wrote name their source without it.
  auto uri = transport::parse_redis_uri(redis.uri("dets"), std::nullopt);
  ASSERT_TRUE(uri);
  auto client = transport::RedisClient::connect(*uri, std::chrono::milliseconds(5000));
  ASSERT_TRUE(client) << client.error().message;
  for (const char* stream : {"frames", "dets"}) {
    auto entries = client->command({"XRANGE", stream, "-", "+"});
    ASSERT_TRUE(entries) << entries.error().message;
    std::string all;  // every field of every entry, as bytes (the messages are protobuf)
    for (size_t i = 0; i < (*entries)->elements; ++i) {
      const redisReply* fields = (*entries)->element[i]->element[1];
      for (size_t k = 0; k < fields->elements; ++k) all.append(fields->element[k]->str, fields->element[k]->len);
    }
    EXPECT_GT((*entries)->elements, 8u) << stream;
    EXPECT_NE(all.find("viewer:***@127.0.0.1:" + std::to_string(http.port())), std::string::npos) << stream;
    EXPECT_EQ(all.find(secret), std::string::npos) << stream;
  }
}

// With --verbose FFmpeg prints lines of its own, and some name a URL made from the source's (an HLS
// playlist's segments: "[hls @ ...] Opening 'http://user:password@host/seg0.ts' for reading"):
// they too go through the redaction.
TEST(RobustnessSecrets, FfmpegsOwnLinesHideThePasswordToo) {
  test::TempDir dir;
  {
    cv::VideoWriter w(dir.file("seg0.ts"), cv::CAP_FFMPEG, cv::VideoWriter::fourcc('m', 'p', '4', 'v'), 25, cv::Size(160, 96));
    ASSERT_TRUE(w.isOpened());
    for (int i = 0; i < 10; ++i) w.write(cv::Mat(96, 160, CV_8UC3, cv::Scalar(i * 20, 128, 255 - i * 20)));
  }
  const std::string playlist = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:0.4,\nseg0.ts\n#EXT-X-ENDLIST\n";
  LocalHttpServer http({{"/live.m3u8", playlist}, {"/seg0.ts", test::read_file(dir.file("seg0.ts"))}});
  ASSERT_GT(http.port(), 0);
  const std::string secret = "Planted-Pw-hls-5k";
  const std::string url = "http://viewer:" + secret + "@127.0.0.1:" + std::to_string(http.port()) + "/live.m3u8";
  test::CliResult r = test::run_cli(dir, {"run", "-m", test::kTinyModel, "-s", url, "--verbose", "-q", "-d", dir.file("d.jsonl")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_GT(test::count_valid_jsonl_lines(dir.file("d.jsonl")), 0) << r.err;
  EXPECT_NE(r.err.find("viewer:***@127.0.0.1"), std::string::npos) << r.err;  // FFmpeg did name the URL
  EXPECT_EQ(r.err.find(secret), std::string::npos) << r.err;
  EXPECT_EQ(test::read_file(dir.file("d.jsonl")).find(secret), std::string::npos);
}

// bench's JSON names the source it ran the pipeline on: without the password.
TEST(RobustnessSecrets, BenchJsonNamesTheSourceWithoutItsPassword) {
  test::TempDir dir;
  test::write_numbered_avi(dir.file("clip.avi"), 10);
  LocalHttpServer http({{"/clip.avi", test::read_file(dir.file("clip.avi"))}});
  ASSERT_GT(http.port(), 0);
  const std::string secret = "Planted-Pw-bench-2m";
  test::SpawnOptions spawn;
  spawn.stdout_path = dir.file("bench.json");
  test::CliResult r = test::run_cli(dir, {"bench", "-m", test::kTinyModel, "-s", "http://viewer:" + secret + "@127.0.0.1:" +
                                          std::to_string(http.port()) + "/clip.avi", "--warmup", "1", "-n", "2", "--json"},
                                    spawn);
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string json = test::read_file(dir.file("bench.json"));
  EXPECT_NE(json.find("viewer:***@127.0.0.1"), std::string::npos) << json;
  EXPECT_EQ(json.find(secret), std::string::npos) << json;
  EXPECT_EQ(r.err.find(secret), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sd
