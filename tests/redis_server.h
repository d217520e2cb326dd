// A real redis-server for tests: started on a free loopback port in a fresh temporary directory,
// stopped (SIGTERM, which Redis turns into SHUTDOWN: the append-only file is flushed), restarted
// on the same port and directory, or killed outright; the process and the directory are gone
// when the object is. No shell is involved; the server dies with the test process.
#pragma once

#include <sys/types.h>

#include <string>

#include <gtest/gtest.h>

namespace sd::test {

inline constexpr const char* kRedisServerPath = "/usr/bin/redis-server";

// Whether kRedisServerPath can be run; tests that need a server GTEST_SKIP() otherwise.
bool redis_server_available();

struct RedisServerOptions {
  bool persistent = false;   // --appendonly yes --appendfsync always (else --save "" and no AOF)
  std::string requirepass;   // empty: no password
};

class RedisServer {
 public:
  explicit RedisServer(RedisServerOptions options = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Picks a free port (retrying when another process takes it first) and starts the server,
  // returning once it answers. The failure says why, with the end of the server's log.
  ::testing::AssertionResult start();
  // SIGTERM and wait; fails if the server did not exit cleanly.
  ::testing::AssertionResult stop();
  // stop() if running, then start again on the same port and directory (the data stays).
  ::testing::AssertionResult restart();
  // SIGKILL and wait: nothing is flushed.
  void kill9();

  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  // redis://[:password@]127.0.0.1:port/stream
  std::string uri(const std::string& stream) const;

 private:
  ::testing::AssertionResult launch();   // on port_, in dir_
  ::testing::AssertionResult wait_ready();
  std::string log_tail() const;

  RedisServerOptions options_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace sd::test
