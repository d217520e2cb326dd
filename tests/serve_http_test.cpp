// --serve over HTTP while a run goes: /health and /metrics answer (the metrics parsed by
// Prometheus' own parser), the MJPEG stream delivers JPEG frames, a token is required and
// accepted and never appears in the log, a port in use or a bad --serve value fails before the
// first frame with its exit code, and Ctrl-C still ends the run (the server's threads with it).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "fake_engine.h"
#include "runtime/interrupt.h"
#include "runtime/pipeline.h"
#include "serve/http_server.h"
#include "test_util.h"

namespace sd {
namespace {

using test::CliResult;
using test::kTinyModel;
using test::Process;

// GET until the server answers with `status` (the run may still be setting up), up to a minute.
httplib::Result get_until(httplib::Client& client, const std::string& path, int status, const httplib::Headers& headers = {}) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (true) {
    auto res = client.Get(path, headers);
    if ((res && res->status == status) || std::chrono::steady_clock::now() > deadline) return res;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Runs tests/prometheus_parse.py (Debian's python3 with python3-prometheus-client) on the text.
int parse_with_prometheus(const test::TempDir& dir, const std::string& text, std::string& output) {
  {
    std::ofstream out(dir.file("metrics.txt"));
    out << text;
  }
  const std::string cmd = std::string(STREAMDET_PYTHON) + " " + STREAMDET_SOURCE_DIR + "/tests/prometheus_parse.py " +
                          dir.file("metrics.txt") + " > " + dir.file("parse.txt") + " 2>&1";
  const int rc = std::system(cmd.c_str());
  output = test::read_file(dir.file("parse.txt"));
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int64_t sample_value(const std::string& text, const std::string& series) {
  const size_t at = text.find(series + " ");
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + series.size() + 1));
}

// The user's view: the executable, an endless live camera, Ctrl-C at the end.
TEST(ServeHttp, HealthMetricsAndStreamWhileTheRunGoesThenCtrlCEndsIt) {
  test::TempDir dir;
  const int port = test::free_loopback_port();
  ASSERT_GT(port, 0);
  const std::string token = "s3cret-t0ken-xyz";
  Process p = test::spawn_streamdet({"run", "-m", kTinyModel, "-s", "synth:w=160,h=96,fps=30,frames=0,live=1", "--serve",
                                     "127.0.0.1:" + std::to_string(port), "--serve-token", token, "--serve-fps", "30"},
                                    dir.file("stderr.txt"));
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(30);
  const httplib::Headers bearer = {{"Authorization", "Bearer " + token}};

  // The token: required on every endpoint, accepted as a bearer header or as ?token=.
  // The web view answers from the start; the source is "connecting" until its first frame (the
  // model's load, with its kernels timed, can take a second on a busy machine): asked again until then.
  auto health = get_until(client, "/health", 200, bearer);
  nlohmann::json h;
  for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);;) {
    ASSERT_TRUE(health) << test::read_file(dir.file("stderr.txt"));
    ASSERT_EQ(health->status, 200) << health->body;
    h = nlohmann::json::parse(health->body);
    ASSERT_EQ(h["sources"].size(), 1u);
    if (h["sources"][0]["state"] != "connecting" || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    health = client.Get("/health", bearer);
  }
  EXPECT_EQ(h["status"], "ok");
  EXPECT_EQ(h["sources"][0]["state"], "live");
  for (const char* path : {"/", "/health", "/metrics", "/stats", "/stream/0"}) {
    auto res = client.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 401) << path;
    EXPECT_EQ(res->body.find(token), std::string::npos);
    res = client.Get(std::string(path) + "?token=wrong");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 401) << path;
  }
  auto page = client.Get("/?token=" + token);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("streamdet live"), std::string::npos);
  EXPECT_EQ(page->body.find("://"), std::string::npos) << "the page must not load anything from the network";

  // /metrics: frames counted while the run goes, and Prometheus' parser reads it all.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string metrics;
  const std::string done = "streamdet_frames_done_total{source=\"synth:w=160,h=96,fps=30,frames=0,live=1\"}";
  while (std::chrono::steady_clock::now() < deadline) {
    auto res = client.Get("/metrics", bearer);
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    EXPECT_EQ(res->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
    metrics = res->body;
    if (sample_value(metrics, done) >= 5) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(sample_value(metrics, done), 5) << metrics;
  std::string parsed;
  const int rc = parse_with_prometheus(dir, metrics, parsed);
  if (rc == 77) {
    ADD_FAILURE() << "python3-prometheus-client is missing (scripts/install-deps.sh installs it): " << parsed;
  } else {
    EXPECT_EQ(rc, 0) << parsed << "\n" << metrics;
    EXPECT_NE(parsed.find("histogram streamdet_stage_duration_seconds"), std::string::npos) << parsed;
    EXPECT_NE(parsed.find("counter streamdet_frames_read"), std::string::npos) << parsed;
  }

  // The MJPEG stream: two whole JPEG parts, then the client leaves.
  std::string stream;
  auto res = client.Get("/stream/0?token=" + token, [&](const char* data, size_t n) {
    stream.append(data, n);
    size_t parts = 0;
    for (size_t at = stream.find("\r\n\r\n\xFF\xD8"); at != std::string::npos; at = stream.find("\r\n\r\n\xFF\xD8", at + 1)) ++parts;
    return parts < 3;  // the third part's start: the first two are complete
  });
  EXPECT_NE(stream.find("--streamdetframe\r\nContent-Type: image/jpeg\r\nContent-Length: "), std::string::npos);
  auto missing = client.Get("/stream/7", bearer);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);

  // Ctrl-C: the run ends (130) with the server's threads, the token nowhere in the log.
  kill(p.pid, SIGINT);
  EXPECT_EQ(test::wait_exit_code(p), exit_code::kInterrupted);
  const std::string log = test::read_file(dir.file("stderr.txt"));
  EXPECT_EQ(log.find(token), std::string::npos) << log;
  EXPECT_NE(log.find("web view: http://127.0.0.1:" + std::to_string(port) + "/"), std::string::npos) << log;
  EXPECT_FALSE(client.Get("/health", bearer)) << "still serving after the run ended";
}

TEST(ServeHttp, APortInUseOrABadValueFailsBeforeTheFirstFrame) {
  test::TempDir dir;
  // Another program listening on the port.
  const int taken = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(taken, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(taken, 4), 0);
  ASSERT_EQ(::getsockname(taken, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  CliResult r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=64,h=64,frames=2", "-d", dir.file("d.jsonl"), "-q",
                                    "--serve", std::to_string(port), "--serve-token", "hidden-token"});
  EXPECT_EQ(r.code, exit_code::kOutput) << r.err;
  EXPECT_NE(test::last_line(r.err).find("--serve 127.0.0.1:" + std::to_string(port) + ": cannot listen there"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("hidden-token"), std::string::npos);
  EXPECT_EQ(test::count_lines(dir.file("d.jsonl")), 0u);
  ::close(taken);

  r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=64,h=64,frames=2", "-q", "--serve", "localhost:http"});
  EXPECT_EQ(r.code, exit_code::kUsage) << r.err;
  EXPECT_NE(test::last_line(r.err).find("--serve 'localhost:http'"), std::string::npos) << r.err;
}

TEST(ServeHttp, ListeningBeyondThisMachineWithoutATokenWarns) {
  test::TempDir dir;
  CliResult r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=64,h=64,frames=2", "-d", dir.file("d.jsonl"),
                                    "--serve", "0.0.0.0:0"});
  EXPECT_EQ(r.code, exit_code::kOk) << r.err;
  EXPECT_NE(r.err.find("--serve 0.0.0.0:0: listening beyond this machine without --serve-token"), std::string::npos) << r.err;
  r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=64,h=64,frames=2", "-d", dir.file("d.jsonl"), "--serve", "0"});
  EXPECT_EQ(r.code, exit_code::kOk) << r.err;
  EXPECT_EQ(r.err.find("without --serve-token"), std::string::npos) << r.err;  // loopback: no warning
}

// --serve 0 -q: the port it picked is on stderr all the same (it printed nothing, so the web view
// could not be found); the line is the only one, and it names a port that was listened on.
TEST(ServeHttp, TheWebViewLineIsPrintedEvenWhenQuiet) {
  test::TempDir dir;
  CliResult r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=64,h=64,frames=2", "-q", "--serve", "0"});
  EXPECT_EQ(r.code, exit_code::kOk) << r.err;
  const auto lines = test::nonempty_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  const std::string prefix = "streamdet: web view: http://127.0.0.1:";
  ASSERT_EQ(lines[0].rfind(prefix, 0), 0u) << lines[0];
  EXPECT_GT(std::stoi(lines[0].substr(prefix.size())), 0) << lines[0];
}

// In process (for ThreadSanitizer): readers poll every endpoint and watch the stream while the
// pipeline writes the figures, then the run is interrupted.
TEST(ServeHttp, InProcessEndpointsUnderLoadAndInterrupt) {
  clear_interrupt();
  test::TempDir dir;
  test::write_minimal_onnx(dir.file("fake.onnx"));
  test::FakeEngineConfig cfg;
  cfg.fixed_delay_ms = 5;
  test::register_fake_engine("fake-serve", cfg);
  const int port = test::free_loopback_port();
  ASSERT_GT(port, 0);
  RunOptions o;
  o.model.model = dir.file("fake.onnx");
  o.model.engine = "fake-serve";
  o.quiet = true;
  o.sources = {"synth:w=160,h=96,fps=60,frames=0,live=1", "synth:w=96,h=64,fps=60,frames=0,live=1"};
  o.detections = dir.file("d.jsonl");
  o.serve = "127.0.0.1:" + std::to_string(port);
  o.serve_fps = 60;
  auto run = std::async(std::launch::async, [&] { return run_detection(o); });

  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(30);
  ASSERT_TRUE(get_until(client, "/health", 200));
  std::atomic<bool> stop{false};
  std::atomic<int> frames{0};
  std::thread viewer([&] {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(30);
    c.Get("/stream/1", [&](const char* data, size_t n) {
      for (size_t i = 0; i + 1 < n; ++i)
        if (static_cast<unsigned char>(data[i]) == 0xFF && static_cast<unsigned char>(data[i + 1]) == 0xD8) ++frames;
      return !stop;
    });
  });
  int64_t stats_done = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((frames < 3 || stats_done < 10) && std::chrono::steady_clock::now() < deadline) {
    auto stats = client.Get("/stats");
    ASSERT_TRUE(stats);
    auto j = nlohmann::json::parse(stats->body);
    ASSERT_EQ(j["sources"].size(), 2u);
    stats_done = j["sources"][0]["frames_done"].get<int64_t>();
    ASSERT_TRUE(client.Get("/metrics"));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(frames, 3);
  EXPECT_GE(stats_done, 10);
  // No connection is left idle after an answer (keep-alive would hold Ctrl-C up to its timeout).
  auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->get_header_value("Connection"), "close");
  request_interrupt();
  ASSERT_EQ(run.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "the run did not end (server threads?)";
  RunOutcome out = run.get();
  stop = true;
  viewer.join();  // the server closed the stream
  ASSERT_FALSE(out.status);
  EXPECT_EQ(out.status.error().code, ErrorCode::kInterrupted);
  clear_interrupt();
}

// The server alone (port 0: any free port): open streams are capped below the server's threads,
// so /health still answers with every viewer's tab open; stop() ends the open streams.
TEST(ServeHttp, StreamsAreCappedAndHealthStillAnswers) {
  auto board = std::make_shared<FrameBoard>(1, 100.0);
  WebServerConfig config{ServeAddress{"127.0.0.1", 0}, "", board, [] {
                           LiveStats s;
                           s.sources.emplace_back();
                           s.sources[0].health.state = SourceState::kLive;
                           return s;
                         }};
  auto server = WebServer::start(config);
  ASSERT_TRUE(server) << server.error().message;
  const int port = (*server)->port();
  ASSERT_GT(port, 0);
  std::atomic<bool> stop{false};
  std::thread poster([&] {  // the pipeline's side: a frame whenever one is wanted
    while (!stop) {
      if (board->wants(0, Clock::now())) board->post(0, cv::Mat(32, 32, CV_8UC3, cv::Scalar(20, 40, 60)));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  std::vector<std::thread> viewers;
  for (int i = 0; i < 8; ++i)
    viewers.emplace_back([&] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(30);
      c.Get("/stream/0", [&](const char*, size_t) { return !stop; });
    });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (board->viewers(0) < 8 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(board->viewers(0), 8);
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(30);
  auto ninth = client.Get("/stream/0");
  ASSERT_TRUE(ninth);
  EXPECT_EQ(ninth->status, 503);
  auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  (*server)->stop();  // with eight streams open
  stop = true;
  for (auto& v : viewers) v.join();
  poster.join();
}

}  // namespace
}  // namespace sd
