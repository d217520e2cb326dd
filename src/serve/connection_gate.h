// The web server's front door, on a thread of its own: it accepts every connection at once and
// holds it, costing no worker thread, until the request's head has arrived (the blank line after
// the headers); only then is the connection handed to a worker. cpp-httplib's own loop gave each
// connection a worker as it was accepted, so a dozen sockets that connect and send nothing held
// all the workers and /health waited behind them (issue 26).
//
// A connection whose head has not arrived within head_timeout (an idle socket, a port scanner, a
// browser's speculative connection, a slow sender) is closed. At most max_waiting connections wait
// at once: beyond that the oldest is closed to make room, so a health check always gets in.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/error.h"
#include "serve/unique_fd.h"

namespace sd {

struct GateLimits {
  size_t max_waiting = 640;  // connections holding no worker yet (500 idle ones with room)
  std::chrono::milliseconds head_timeout{10000};
  size_t max_head_bytes = 16384;  // handed on when reached: the worker answers 414 or 431
};

class ConnectionGate {
 public:
  struct Arrival {
    UniqueFd socket;   // non-blocking
    std::string head;  // the bytes read: the request's head, and what followed it
  };
  using Handler = std::function<void(Arrival)>;

  // Binds and listens (SO_REUSEADDR, not SO_REUSEPORT: a port in use is refused). Port 0: any
  // free port. Raises the soft limit on open files toward the hard one when max_waiting would not
  // fit below it, and lowers max_waiting when it still would not. Errors: kOutput, one line.
  static Result<std::unique_ptr<ConnectionGate>> listen(const std::string& host, int port, GateLimits limits);
  ~ConnectionGate();
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  int port() const { return port_; }
  size_t max_waiting() const { return limits_.max_waiting; }
  // Starts the thread; `ready` gets each connection whose head arrived (on the gate's thread: it
  // must not block).
  void start(Handler ready);
  // Stops accepting, closes the listener and every waiting connection, joins. Idempotent.
  void stop();

 private:
  ConnectionGate(UniqueFd listener, UniqueFd wake, int port, GateLimits limits);
  void loop();

  UniqueFd listener_;
  UniqueFd wake_;  // an eventfd: stop() writes it
  int port_;
  GateLimits limits_;
  Handler ready_;
  std::thread thread_;
};

}  // namespace sd
