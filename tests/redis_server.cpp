#include "redis_server.h"
#include "test_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace sd::test {
namespace {

// Start-up and shutdown are waited for by counting attempts 10 ms apart, not by a deadline a slow
// machine could miss: 1000 of them is ten seconds at least, Redis needs a few milliseconds.
constexpr int kAttempts = 1000;
constexpr auto kPause = std::chrono::milliseconds(10);

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

// The value of `key:` in an INFO reply, or "".
std::string info_field(const std::string& info, const std::string& key) {
  const size_t at = info.find("\n" + key + ":");
  if (at == std::string::npos) return "";
  const size_t start = at + key.size() + 2;
  return info.substr(start, info.find_first_of("\r\n", start) - start);
}

}  // namespace

bool redis_server_available() { return access(kRedisServerPath, X_OK) == 0; }

RedisServer::RedisServer(RedisServerOptions options) : options_(std::move(options)) {
  std::string templ = (std::filesystem::temp_directory_path() / "streamdet_redis_XXXXXX").string();
  if (!mkdtemp(templ.data())) throw std::runtime_error("cannot create a temp dir for redis-server");
  dir_ = templ;
}

RedisServer::~RedisServer() {
  kill9();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string RedisServer::uri(const std::string& stream) const {
  const std::string auth = options_.requirepass.empty() ? "" : ":" + options_.requirepass + "@";
  return "redis://" + auth + "127.0.0.1:" + std::to_string(port_) + "/" + stream;
}

::testing::AssertionResult RedisServer::start() {
  ::testing::AssertionResult last = ::testing::AssertionFailure() << "no free port";
  for (int attempt = 0; attempt < 5 && !running(); ++attempt) {
    port_ = free_loopback_port();
    if (port_ == 0) continue;
    last = launch();
  }
  return last;
}

::testing::AssertionResult RedisServer::restart() {
  if (auto stopped = stop(); !stopped) return stopped;
  return launch();
}

::testing::AssertionResult RedisServer::launch() {
  std::vector<std::string> args = {kRedisServerPath, "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                   "--dir", dir_, "--logfile", dir_ + "/redis.log", "--daemonize", "no", "--save", ""};
  if (options_.persistent) {
    args.insert(args.end(), {"--appendonly", "yes", "--appendfsync", "always"});
  } else {
    args.insert(args.end(), {"--appendonly", "no"});
  }
  if (!options_.requirepass.empty()) args.insert(args.end(), {"--requirepass", options_.requirepass});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out_path = dir_ + "/stdout.log";

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return ::testing::AssertionFailure() << "fork: " << std::strerror(errno);
  if (pid == 0) {
    // In the child, only async-signal-safe calls until exec. The server is killed with us, so a
    // crashed test leaves no server behind.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int in = open("/dev/null", O_RDONLY);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
    }
    if (in >= 0) dup2(in, 0);
    execv(kRedisServerPath, argv.data());
    _exit(127);
  }
  pid_ = pid;
  auto ready = wait_ready();
  if (!ready) kill9();
  return ready;
}

// Ready when the server on our port is our process (INFO's process_id: another server could
// have taken the port first) and has finished loading its data.
::testing::AssertionResult RedisServer::wait_ready() {
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return ::testing::AssertionFailure() << "redis-server on port " << port_ << " " << describe_status(status)
                                           << " during start-up; its log ends:\n" << log_tail();
    }
    const timeval tv{0, 200000};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
    std::string info;
    if (c && !c->err) {
      redisSetTimeout(c, tv);
      if (!options_.requirepass.empty()) freeReplyObject(redisCommand(c, "AUTH %s", options_.requirepass.c_str()));
      if (auto* r = static_cast<redisReply*>(redisCommand(c, "INFO"))) {
        if (r->type == REDIS_REPLY_STRING) info.assign(r->str, r->len);
        freeReplyObject(r);
      }
    }
    if (c) redisFree(c);
    const std::string pid_text = info_field(info, "process_id");
    if (!pid_text.empty() && pid_text != std::to_string(pid_))
      return ::testing::AssertionFailure() << "another server (pid " << pid_text << ") answers on port " << port_;
    if (!pid_text.empty() && info_field(info, "loading") == "0") return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(kPause);
  }
  return ::testing::AssertionFailure() << "redis-server on port " << port_ << " did not answer after " << kAttempts
                                       << " attempts; its log ends:\n" << log_tail();
}

::testing::AssertionResult RedisServer::stop() {
  if (!running()) return ::testing::AssertionSuccess();
  kill(pid_, SIGTERM);
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ::testing::AssertionSuccess();
      return ::testing::AssertionFailure() << "redis-server " << describe_status(status) << " on SIGTERM; its log ends:\n"
                                           << log_tail();
    }
    std::this_thread::sleep_for(kPause);
  }
  kill9();
  return ::testing::AssertionFailure() << "redis-server did not exit after SIGTERM (killed); its log ends:\n" << log_tail();
}

void RedisServer::kill9() {
  if (!running()) return;
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

std::string RedisServer::log_tail() const {
  std::string all;
  for (const char* name : {"/stdout.log", "/redis.log"}) {
    std::ifstream f(dir_ + name, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    all += ss.str();
  }
  return all.size() > 2000 ? all.substr(all.size() - 2000) : all;
}

}  // namespace sd::test
