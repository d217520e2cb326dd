// A real RTSP camera (tests/helpers/rtsp_test_server.cpp, a child process on a free loopback
// port) that dies in the middle of a run and comes back on the same port: the run carries on
// with the frames after the outage, the outage and the reconnect are counted, and a stop request
// in the middle of the outage ends the run at once. With --serve, /health shows the outage while
// it lasts and /metrics counts it (the acceptance).
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <regex>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "fake_engine.h"
#include "runtime/interrupt.h"
#include "runtime/pipeline.h"
#include "sources/source.h"
#include "test_util.h"

namespace sd {
namespace {

using namespace std::chrono_literals;

bool accepts(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

// The camera: the test server as a child process, killed like a camera that loses power.
class RtspCamera {
 public:
  explicit RtspCamera(int port) : port_(port) {}
  ~RtspCamera() { kill(); }
  bool start() {
    const std::string port = std::to_string(port_);
    pid_ = fork();
    if (pid_ == 0) {
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      execl(STREAMDET_RTSP_TEST_SERVER, STREAMDET_RTSP_TEST_SERVER, port.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    if (pid_ < 0) return false;
    for (int i = 0; i < 200; ++i) {  // up to 10 s to listen
      if (accepts(port_)) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  std::string url() const { return "rtsp://127.0.0.1:" + std::to_string(port_) + "/test"; }

 private:
  int port_;
  pid_t pid_ = -1;
};

// Counts the frames the run gets from its source, and when the last one came.
struct FrameLog {
  std::atomic<int64_t> frames{0};
  std::atomic<int64_t> after_mark{0};  // frames since mark()
  std::atomic<bool> marked{false};
  void mark() {
    after_mark = 0;
    marked = true;
  }
};

class CountingSource final : public Source {
 public:
  CountingSource(std::unique_ptr<Source> inner, FrameLog& log) : inner_(std::move(inner)), log_(log) {}
  const SourceInfo& info() const override { return inner_->info(); }
  Result<bool> read(Frame& frame) override {
    Result<bool> r = inner_->read(frame);
    if (r && *r) {
      ++log_.frames;
      if (log_.marked) ++log_.after_mark;
    }
    return r;
  }
  std::optional<std::string> damage() const override { return inner_->damage(); }
  void settle(const Frame& frame, FrameOutcome outcome) override { inner_->settle(frame, outcome); }
  Status close() override { return inner_->close(); }
  void prefer_size(cv::Size s) override { inner_->prefer_size(s); }

 private:
  std::unique_ptr<Source> inner_;
  FrameLog& log_;
};

bool wait_for(const std::function<bool()>& done, std::chrono::seconds limit) {
  const auto until = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

class RtspReconnectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_interrupt();
    test::write_minimal_onnx(dir.file("fake.onnx"));
    test::register_fake_engine("fake-rtsp", {});
    port = test::free_loopback_port();
    ASSERT_GT(port, 0);
    camera = std::make_unique<RtspCamera>(port);
    ASSERT_TRUE(camera->start()) << "the test RTSP server did not start";
  }
  void TearDown() override { clear_interrupt(); }
  std::future<RunOutcome> start_run(const std::string& serve = "") {
    RunOptions o;
    o.serve = serve;
    o.model.model = dir.file("fake.onnx");
    o.model.engine = "fake-rtsp";
    o.quiet = true;
    o.sources = {camera->url()};
    o.detections = dir.file("d.jsonl");
    o.stall_timeout_ms = 1500;
    return std::async(std::launch::async, [this, o] {
      return run_detection(o, [this](const std::string& spec, const SourceOptions& so) -> Result<std::unique_ptr<Source>> {
        SD_ASSIGN_OR_RETURN(auto s, open_source(spec, so));
        return std::unique_ptr<Source>(new CountingSource(std::move(s), log));
      });
    });
  }
  // The camera is down for `outage`, then back; the run carries on. The web view's /health says
  // so while the camera is down, and /metrics counts the outage once it is over.
  void survive(std::chrono::seconds outage) {
    const int http_port = test::free_loopback_port();
    ASSERT_GT(http_port, 0);
    auto run = start_run("127.0.0.1:" + std::to_string(http_port));
    httplib::Client web("127.0.0.1", http_port);
    web.set_connection_timeout(2);
    web.set_read_timeout(5);
    ASSERT_TRUE(wait_for([&] { return log.frames >= 10; }, 20s)) << "no frames from the camera";
    {
      auto health = web.Get("/health");
      ASSERT_TRUE(health) << "no answer from /health";
      EXPECT_EQ(health->status, 200) << health->body;
    }
    const auto down_at = Clock::now();
    camera->kill();
    // Past the stall timeout (1.5 s), well before the camera is back.
    std::string state_seen;
    EXPECT_TRUE(wait_for(
        [&] {
          auto health = web.Get("/health");
          if (!health || health->status != 503) return false;
          auto j = nlohmann::json::parse(health->body, nullptr, false);
          if (j.is_discarded() || j["sources"].empty()) return false;
          state_seen = j["sources"][0].value("state", "");
          return state_seen == "stalled" || state_seen == "backoff" || state_seen == "connecting";
        },
        std::chrono::seconds(outage.count() - 2)))
        << "/health did not show the outage (last state seen: '" << state_seen << "')";
    std::this_thread::sleep_until(down_at + outage);
    ASSERT_TRUE(camera->start()) << "the test RTSP server did not start again";
    log.mark();
    EXPECT_TRUE(wait_for([&] { return log.after_mark >= 25; }, 30s)) << "no frames after the camera came back";
    {
      auto health = web.Get("/health");
      ASSERT_TRUE(health);
      EXPECT_EQ(health->status, 200) << "after the outage: " << health->body;
      auto metrics = web.Get("/metrics");
      ASSERT_TRUE(metrics);
      auto value = [&](const std::string& family) {
        std::smatch m;
        const std::regex line("\\n" + family + "\\{[^}]*\\} ([0-9.e+]+)");
        return std::regex_search(metrics->body, m, line) ? std::stod(m[1]) : -1.0;
      };
      EXPECT_GE(value("streamdet_source_outages_total"), 1) << metrics->body;
      EXPECT_GE(value("streamdet_source_reconnects_total"), 1) << metrics->body;
      EXPECT_GE(value("streamdet_source_outage_seconds_total"), static_cast<double>(outage.count()) - 1.6) << metrics->body;
    }
    request_interrupt();
    ASSERT_EQ(run.wait_for(10s), std::future_status::ready) << "the run did not end after the stop request";
    RunOutcome out = run.get();
    ASSERT_TRUE(out.started);
    ASSERT_EQ(out.profile.sources.size(), 1u);
    const SourceReport& s = out.profile.sources[0];
    EXPECT_GE(s.outages, 1);
    EXPECT_GE(s.reconnects, 1);
    // Down from when the stall was noticed (1.5 s after the last frame at most) to the first
    // frame after the restart.
    EXPECT_GE(s.outage_ms, 1000.0 * static_cast<double>(outage.count()) - 1600);
    // 25 fps over the outage, give or take the stall timeout and the reconnect.
    EXPECT_GE(s.frames_lost, 25 * (outage.count() - 1));
    EXPECT_EQ(s.frames_read, log.frames.load());
  }

  test::TempDir dir;
  int port = -1;
  std::unique_ptr<RtspCamera> camera;
  FrameLog log;
};

// The acceptance: a camera down for 10 s is waited for.
TEST_F(RtspReconnectTest, SurvivesTheCameraGoingAwayForTenSeconds) { survive(10s); }

TEST_F(RtspReconnectTest, AStopRequestDuringTheOutageEndsTheRunAtOnce) {
  auto run = start_run();
  ASSERT_TRUE(wait_for([&] { return log.frames >= 10; }, 20s)) << "no frames from the camera";
  camera->kill();
  std::this_thread::sleep_for(2500ms);  // past the stall timeout: backing off and reconnecting
  const auto t0 = Clock::now();
  request_interrupt();
  ASSERT_EQ(run.wait_for(10s), std::future_status::ready) << "the run did not end after the stop request";
  EXPECT_LT(Clock::now() - t0, 2s);
  RunOutcome out = run.get();
  ASSERT_FALSE(out.status);
  EXPECT_EQ(out.status.error().code, ErrorCode::kInterrupted) << out.status.error().message;
  ASSERT_EQ(out.profile.sources.size(), 1u);
  EXPECT_EQ(out.profile.sources[0].outages, 1);
  EXPECT_EQ(out.profile.sources[0].reconnects, 0);
}

}  // namespace
}  // namespace sd
