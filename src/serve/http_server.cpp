#include "serve/http_server.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include <sys/socket.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "serve/connection_gate.h"
#include "serve/health_json.h"
#include "serve/live_window.h"
#include "serve/metrics_text.h"
#include "serve/socket_stream.h"
#include "serve/stats_json.h"

namespace sd {
namespace {

constexpr const char* kBoundary = "streamdetframe";
// Each open stream holds one of the server's threads for as long as it is watched; capping the
// streams below the threads keeps /health and /metrics answering however many tabs are open.
constexpr size_t kServerThreads = 12;
constexpr int kMaxStreams = 8;
constexpr auto kResendAfter = std::chrono::seconds(2);
// A worker gets a connection only once its request's head is in (serve/connection_gate.h), so a
// read waits only for a body, which none of these endpoints takes: a client that promises one and
// sends nothing frees its worker after this. A viewer that stops reading frees it after the write
// timeout (cpp-httplib's default).
constexpr auto kReadTimeout = std::chrono::seconds(1);
constexpr auto kWriteTimeout = std::chrono::seconds(5);

// Compares without stopping at the first difference, so the time taken does not tell how much of
// a guessed token was right.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % std::max<size_t>(1, b.size())]);
  return diff == 0;
}

bool authorized(const httplib::Request& req, const std::string& token) {
  if (token.empty()) return true;
  const std::string header = req.get_header_value("Authorization");
  const std::string bearer = "Bearer ";
  if (header.size() > bearer.size() && header.compare(0, bearer.size(), bearer) == 0 &&
      same_secret(header.substr(bearer.size()), token))
    return true;
  return req.has_param("token") && same_secret(req.get_param_value("token"), token);
}

// cpp-httplib's routing, parsing and answering, on connections the gate hands over: its own
// accept loop (listen()) is not used.
class Router : public httplib::Server {
 public:
  // cpp-httplib sends a streamed body (the MJPEG) only while svr_sock_ holds a socket, which its
  // own listen() would set: no socket of its own is used here, so a placeholder says "serving"
  // until close().
  Router() { svr_sock_ = kServing; }
  ~Router() override { close(); }  // the placeholder is no socket of ours: never closed as one
  void close() { svr_sock_ = INVALID_SOCKET; }
  // Answers one request (Connection: close) on the stream.
  void answer(httplib::Stream& stream) {
    bool closed = false;
    process_request(stream, /*close_connection=*/true, closed, nullptr);
  }

 private:
  static constexpr socket_t kServing = 0;
};

}  // namespace

struct WebServer::Impl {
  WebServerConfig config;
  Router server;
  std::unique_ptr<ConnectionGate> gate;
  std::unique_ptr<httplib::ThreadPool> workers;
  std::atomic<bool> stopping{false};
  std::atomic<int> streams{0};
  std::mutex serving_mutex;
  std::set<int> serving;  // the sockets workers are answering on: stop() shuts them down
  LiveWindow window;

  void routes();
  void stream(int source, httplib::Response& res);
  void answer(ConnectionGate::Arrival& arrival);
};

void WebServer::Impl::answer(ConnectionGate::Arrival& arrival) {
  const int fd = arrival.socket.get();
  {
    std::lock_guard lock(serving_mutex);
    if (stopping) return;
    serving.insert(fd);
  }
  SocketStream stream(fd, std::move(arrival.head), kReadTimeout, kWriteTimeout);
  server.answer(stream);
  {
    std::lock_guard lock(serving_mutex);
    serving.erase(fd);
  }
  ::shutdown(fd, SHUT_RDWR);
}

void WebServer::Impl::routes() {
  // One request per connection (Router::answer): an idle keep-alive connection would hold a worker;
  // the page's once-a-second polls cost a loopback connect each.
  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req, config.token)) return httplib::Server::HandlerResponse::Unhandled;
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer");
    res.set_content("401: this server needs its --serve-token (Authorization: Bearer TOKEN, or ?token=TOKEN)\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_content(web_page_html(), "text/html; charset=utf-8");
  });
  server.Get("/stats", [this](const httplib::Request&, httplib::Response& res) {
    const LiveStats stats = config.stats();
    const LiveRates rates = window.update(stats);
    res.set_header("Cache-Control", "no-store");
    res.set_content(stats_json(stats, rates, wall_now_us()).dump(), "application/json");
  });
  server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(prometheus_text(config.stats()), kPrometheusContentType);
  });
  server.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const nlohmann::json health = health_json(config.stats(), wall_now_us());
    res.status = health_is_ok(health) ? 200 : 503;
    res.set_header("Cache-Control", "no-store");
    res.set_content(health.dump(), "application/json");
  });
  server.Get(R"(/stream/(\d{1,6}))", [this](const httplib::Request& req, httplib::Response& res) {
    const int source = std::stoi(req.matches[1].str());
    if (static_cast<size_t>(source) >= config.board->size()) {
      res.status = 404;
      res.set_content("404: no source " + std::to_string(source) + "\n", "text/plain");
      return;
    }
    stream(source, res);
  });
}

// MJPEG: one JPEG per part of a multipart/x-mixed-replace response, each the latest frame; the
// board copies frames only while a Watch lives, i.e. while this response is being sent.
void WebServer::Impl::stream(int source, httplib::Response& res) {
  if (streams.fetch_add(1) >= kMaxStreams) {
    streams.fetch_sub(1);
    res.status = 503;
    res.set_content("503: " + std::to_string(kMaxStreams) + " streams are open already\n", "text/plain");
    return;
  }
  // The stream's state, kept by httplib with the provider: it counts the stream and the viewer.
  struct Open {
    Open(std::atomic<int>& count, FrameBoard& board, int s) : streams(count), watch(board, s) {}
    ~Open() { streams.fetch_sub(1); }
    std::atomic<int>& streams;
    FrameBoard::Watch watch;
    uint64_t sequence = 0;
    std::shared_ptr<const std::string> jpeg;  // the last one sent
    Clock::time_point sent{};
  };
  auto open = std::make_shared<Open>(streams, *config.board, source);
  res.set_header("Cache-Control", "no-store");
  res.set_content_provider(
      std::string("multipart/x-mixed-replace; boundary=") + kBoundary, [this, source, open](size_t, httplib::DataSink& sink) {
        while (!stopping && !config.board->closed()) {
          auto next = config.board->next(source, open->sequence, std::chrono::milliseconds(250));
          if (next) {
            open->sequence = next->sequence;
            open->jpeg = next->data;
          } else if (!open->jpeg || Clock::now() - open->sent < kResendAfter) {
            continue;
          }
          // No new frame for a while (a stalled source): the last one again. A viewer who left is
          // only noticed by a failed write, and this frees their thread.
          open->sent = Clock::now();
          const std::string head = std::string("--") + kBoundary + "\r\nContent-Type: image/jpeg\r\nContent-Length: " +
                                   std::to_string(open->jpeg->size()) + "\r\n\r\n";
          return sink.write(head.data(), head.size()) && sink.write(open->jpeg->data(), open->jpeg->size()) &&
                 sink.write("\r\n", 2);
        }
        sink.done();
        return true;
      });
}

WebServer::WebServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

WebServer::~WebServer() { stop(); }

Result<std::unique_ptr<WebServer>> WebServer::start(WebServerConfig config) {
  auto impl = std::make_unique<Impl>();
  impl->config = std::move(config);
  impl->routes();
  const ServeAddress& a = impl->config.address;
  const std::string where = (a.host.find(':') != std::string::npos ? "[" + a.host + "]" : a.host) + ":" + std::to_string(a.port);
  // SO_REUSEADDR, not cpp-httplib's SO_REUSEPORT (which lets a second server bind a port in use
  // and share its connections): a port in use is refused, and a restart still binds at once.
  auto gate = ConnectionGate::listen(a.host, a.port, impl->config.limits);
  if (!gate)
    return fail(ErrorCode::kOutput, "--serve " + where + ": cannot listen there (the port is in use, or the host is not "
                                    "an address of this machine)");
  impl->gate = std::move(*gate);
  impl->workers = std::make_unique<httplib::ThreadPool>(kServerThreads);
  Impl* raw = impl.get();
  impl->gate->start([raw](ConnectionGate::Arrival arrival) {
    // std::function needs a copyable task: the connection travels in a shared_ptr.
    auto shared = std::make_shared<ConnectionGate::Arrival>(std::move(arrival));
    raw->workers->enqueue([raw, shared] { raw->answer(*shared); });
  });
  return std::unique_ptr<WebServer>(new WebServer(std::move(impl)));
}

int WebServer::port() const { return impl_->gate->port(); }

void WebServer::stop() {
  if (!impl_ || !impl_->workers) return;
  impl_->stopping = true;
  impl_->config.board->close();  // the streams end
  impl_->server.close();
  impl_->gate->stop();           // no new connection; those that sent nothing yet are closed
  {
    // A worker waiting on a client (a body that does not come, a viewer that does not read)
    // returns at once.
    std::lock_guard lock(impl_->serving_mutex);
    for (int fd : impl_->serving) ::shutdown(fd, SHUT_RDWR);
  }
  impl_->workers->shutdown();  // joins; tasks still queued see `stopping` and close their socket
  impl_->workers.reset();
}

}  // namespace sd
