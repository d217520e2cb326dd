// The web server of --serve, beside the pipeline for the run's duration (cpp-httplib's routing on
// threads of its own, behind a connection gate that holds connections until their request has
// arrived: serve/connection_gate.h): the live page (/), each source's annotated stream as MJPEG (/stream/N), the page's
// figures as JSON (/stats), Prometheus metrics (/metrics) and health (/health, 200 when ok, 503
// otherwise). With a token, every endpoint needs it (Authorization: Bearer, or ?token=). The
// token is never logged or shown in errors. docs/observe.md describes the endpoints.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/error.h"
#include "runtime/live_stats.h"
#include "serve/connection_gate.h"
#include "serve/frame_board.h"
#include "serve/serve_address.h"

namespace sd {

struct WebServerConfig {
  ServeAddress address;
  std::string token;                      // empty: no token needed
  std::shared_ptr<FrameBoard> board;      // the annotated frames
  std::function<LiveStats()> stats;       // a live reading of the run, from any thread
  GateLimits limits;                      // connections waiting for their request (tests lower them)
};

class WebServer {
 public:
  // Binds and starts serving. Errors: kOutput naming the address (a port in use, a host that is
  // not this machine's).
  static Result<std::unique_ptr<WebServer>> start(WebServerConfig config);
  ~WebServer();
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  int port() const;  // the port bound (the one chosen, for port 0)
  // Ends every stream, stops listening and joins the server's threads. Idempotent.
  void stop();

  struct Impl;

 private:
  explicit WebServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The page at / (web_page.cpp): self-contained HTML, no network needed.
const std::string& web_page_html();

}  // namespace sd
