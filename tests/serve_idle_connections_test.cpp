// The web server under idle connections (issue 26): sockets that connect and send nothing hold no
// worker thread, so /health and /metrics answer while 500 of them are open (before, 12 idle ones
// delayed /health 5 s and 200 held it over a minute), Ctrl-C ends the run meanwhile, a request
// that arrives in pieces is still answered, and the waiting connections are bounded: beyond the
// bound the oldest is closed, and one that sends no whole request in time is closed too.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include <httplib.h>

#include "cli_util.h"
#include "serve/http_server.h"
#include "serve/unique_fd.h"
#include "test_util.h"

namespace sd {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr size_t kIdle = 500;
// The target is 1 s (docs/benchmarks.md has the figures); the bound holds on a loaded 2-core
// machine, and the old server, which needed 5 s per 12 idle connections, is far beyond it.
constexpr auto kAnswerBound = std::chrono::seconds(4);

// Room for kIdle sockets of our own: the soft limit raised toward the hard one.
bool make_room_for_sockets(size_t n) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  const rlim_t wanted = n + 256;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < wanted) {
    limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(limit.rlim_max, wanted);
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= wanted;
}

UniqueFd connect_loopback(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) fd.reset();
  return fd;
}

// Connections that connect and send nothing.
std::vector<UniqueFd> open_idle(int port, size_t n) {
  std::vector<UniqueFd> idle;
  for (size_t i = 0; i < n; ++i) {
    idle.push_back(connect_loopback(port));
    EXPECT_TRUE(idle.back()) << "connection " << i << ": " << std::strerror(errno);
  }
  return idle;
}

// Whether the server closed the connection (EOF) within `wait`.
bool closed_by_server(const UniqueFd& fd, std::chrono::milliseconds wait) {
  pollfd p{fd.get(), POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return false;
  char c;
  return ::recv(fd.get(), &c, 1, MSG_DONTWAIT) <= 0;
}

struct Timed {
  int status = -1;  // -1: no answer
  std::chrono::milliseconds took{};
};

Timed timed_get(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(10);
  client.set_read_timeout(10);
  const auto start = SteadyClock::now();
  auto res = client.Get(path);
  Timed t;
  t.took = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start);
  if (res) t.status = res->status;
  return t;
}

struct ServerAlone {
  std::shared_ptr<FrameBoard> board = std::make_shared<FrameBoard>(1, 100.0);
  std::unique_ptr<WebServer> server;

  explicit ServerAlone(GateLimits limits = {}) {
    WebServerConfig config{ServeAddress{"127.0.0.1", 0}, "", board, [] {
                             LiveStats s;
                             s.sources.emplace_back();
                             s.sources[0].health.state = SourceState::kLive;
                             return s;
                           }};
    config.limits = limits;
    auto started = WebServer::start(config);
    EXPECT_TRUE(started) << started.error().message;
    if (started) server = std::move(*started);
  }
  int port() const { return server->port(); }
};

TEST(ServeIdleConnections, HealthAndMetricsAnswerWith500IdleConnectionsOpen) {
  if (!make_room_for_sockets(kIdle)) GTEST_SKIP() << "the hard limit on open files is below " << kIdle + 256;
  ServerAlone s;
  ASSERT_TRUE(s.server);
  std::vector<UniqueFd> idle = open_idle(s.port(), kIdle);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all accepted by now
  for (const char* path : {"/health", "/metrics", "/health"}) {
    const Timed t = timed_get(s.port(), path);
    EXPECT_EQ(t.status, 200) << path << " after " << t.took.count() << " ms";
    EXPECT_LT(t.took, kAnswerBound) << path;
  }
  // Stopping (what Ctrl-C does) with them still open.
  const auto start = SteadyClock::now();
  s.server->stop();
  EXPECT_LT(SteadyClock::now() - start, kAnswerBound);
  EXPECT_TRUE(closed_by_server(idle.front(), std::chrono::milliseconds(2000)));
}

// The user's view: the executable on a live camera, a machine whose soft limit on open files is
// low (256: the run raises it), 500 idle connections, then Ctrl-C.
TEST(ServeIdleConnections, CtrlCEndsTheRunWith500IdleConnectionsOpen) {
  if (!make_room_for_sockets(kIdle)) GTEST_SKIP() << "the hard limit on open files is below " << kIdle + 256;
  test::TempDir dir;
  const int port = test::free_loopback_port();
  ASSERT_GT(port, 0);
  test::SpawnOptions options;
  options.open_files_soft_limit = 256;
  test::Process p = test::spawn_streamdet({"run", "-m", test::kTinyModel, "-s", "synth:w=160,h=96,fps=30,frames=0,live=1",
                                           "--serve", "127.0.0.1:" + std::to_string(port)},
                                          dir.file("stderr.txt"), options);
  const auto up_by = SteadyClock::now() + std::chrono::seconds(60);
  while (timed_get(port, "/health").status != 200 && SteadyClock::now() < up_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::vector<UniqueFd> idle = open_idle(port, kIdle);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const Timed health = timed_get(port, "/health");
  EXPECT_EQ(health.status, 200) << test::read_file(dir.file("stderr.txt"));
  EXPECT_LT(health.took, kAnswerBound);

  // Fresh ones for Ctrl-C: the old server's threads had just begun their 5 s wait on them.
  idle.clear();
  idle = open_idle(port, kIdle);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto start = SteadyClock::now();
  kill(p.pid, SIGINT);
  int status = 0;
  bool exited = false;
  while (!(exited = waitpid(p.pid, &status, WNOHANG) == p.pid) && SteadyClock::now() - start < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start);
  if (!exited) {
    kill(p.pid, SIGKILL);
    waitpid(p.pid, &status, 0);
    FAIL() << "the run did not end within 20 s of Ctrl-C";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), exit_code::kInterrupted) << test::read_file(dir.file("stderr.txt"));
  EXPECT_LT(took, std::chrono::seconds(3)) << took.count() << " ms";  // 0.1 s measured, 1 s the target
}

std::string read_answer(const UniqueFd& fd) {
  std::string answer;
  char buffer[4096];
  pollfd p{fd.get(), POLLIN, 0};
  while (::poll(&p, 1, 10000) > 0) {
    const ssize_t n = ::recv(fd.get(), buffer, sizeof buffer, 0);
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  return answer;
}

TEST(ServeIdleConnections, ARequestThatArrivesInPiecesIsAnswered) {
  ServerAlone s;
  ASSERT_TRUE(s.server);
  UniqueFd fd = connect_loopback(s.port());
  ASSERT_TRUE(fd);
  for (const std::string piece : {"GET /hea", "lth HTTP/1.1\r\nHost: x\r\n", "\r\n"}) {
    ASSERT_EQ(::send(fd.get(), piece.data(), piece.size(), MSG_NOSIGNAL), static_cast<ssize_t>(piece.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string answer = read_answer(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  EXPECT_NE(answer.find("\"status\":\"ok\""), std::string::npos) << answer;
}

// `printf 'GET /health HTTP/1.0\r\n\r\n' | nc -N host port`: the request, then the client's side
// closed at once.
TEST(ServeIdleConnections, ARequestFollowedByAHalfCloseIsAnswered) {
  ServerAlone s;
  ASSERT_TRUE(s.server);
  UniqueFd fd = connect_loopback(s.port());
  ASSERT_TRUE(fd);
  const std::string request = "GET /health HTTP/1.0\r\n\r\n";
  ASSERT_EQ(::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  ::shutdown(fd.get(), SHUT_WR);
  const std::string answer = read_answer(fd);
  EXPECT_NE(answer.find(" 200 "), std::string::npos) << answer;
}

TEST(ServeIdleConnections, BeyondTheBoundTheOldestWaitingConnectionIsClosed) {
  GateLimits limits;
  limits.max_waiting = 16;
  ServerAlone s(limits);
  ASSERT_TRUE(s.server);
  std::vector<UniqueFd> idle = open_idle(s.port(), 40);
  const Timed health = timed_get(s.port(), "/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_LT(health.took, kAnswerBound);
  // The first 24 made room for the last 16, which made room for the health check: the oldest
  // went, the newest still wait.
  EXPECT_TRUE(closed_by_server(idle.front(), std::chrono::milliseconds(2000)));
  EXPECT_TRUE(closed_by_server(idle[24], std::chrono::milliseconds(2000)));
  EXPECT_FALSE(closed_by_server(idle.back(), std::chrono::milliseconds(200)));
}

TEST(ServeIdleConnections, AConnectionWithoutAWholeRequestInTimeIsClosed) {
  GateLimits limits;
  limits.head_timeout = std::chrono::milliseconds(300);
  ServerAlone s(limits);
  ASSERT_TRUE(s.server);
  UniqueFd silent = connect_loopback(s.port());
  UniqueFd partial = connect_loopback(s.port());
  ASSERT_TRUE(silent && partial);
  const std::string head = "GET /health HTTP/1.1\r\nHost: x\r\n";  // no blank line: not whole
  ASSERT_EQ(::send(partial.get(), head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  EXPECT_TRUE(closed_by_server(silent, std::chrono::milliseconds(5000)));
  EXPECT_TRUE(closed_by_server(partial, std::chrono::milliseconds(5000)));
  EXPECT_EQ(timed_get(s.port(), "/health").status, 200);
}

}  // namespace
}  // namespace sd
