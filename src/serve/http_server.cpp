#include "serve/http_server.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include <sys/socket.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "serve/health_json.h"
#include "serve/live_window.h"
#include "serve/metrics_text.h"
#include "serve/stats_json.h"

namespace sd {
namespace {

constexpr const char* kBoundary = "streamdetframe";
// Each open stream holds one of the server's threads for as long as it is watched; capping the
// streams below the threads keeps /health and /metrics answering however many tabs are open.
constexpr size_t kServerThreads = 12;
constexpr int kMaxStreams = 8;
constexpr auto kResendAfter = std::chrono::seconds(2);

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

}  // namespace

struct WebServer::Impl {
  WebServerConfig config;
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> stopping{false};
  std::atomic<bool> listen_returned{false};
  std::atomic<int> streams{0};
  LiveWindow window;
  int port = 0;

  void routes();
  void stream(int source, httplib::Response& res);
};

void WebServer::Impl::routes() {
  // httplib's default sets SO_REUSEPORT, which lets a second server bind a port in use (and share
  // its connections): SO_REUSEADDR alone refuses that, and still allows a restart at once.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server.new_task_queue = [] { return new httplib::ThreadPool(kServerThreads); };
  // One request per connection: an idle keep-alive connection would hold stop() (Ctrl-C) up to
  // its timeout (1 s at the least); the page's once-a-second polls cost a loopback connect each.
  server.set_keep_alive_max_count(1);
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
  if (a.port == 0) {
    impl->port = impl->server.bind_to_any_port(a.host);
    if (impl->port <= 0) impl->port = -1;
  } else {
    impl->port = impl->server.bind_to_port(a.host, a.port) ? a.port : -1;
  }
  if (impl->port < 0)
    return fail(ErrorCode::kOutput, "--serve " + where + ": cannot listen there (the port is in use, or the host is not "
                                    "an address of this machine)");
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] {
    raw->server.listen_after_bind();
    raw->listen_returned = true;
  });
  // stop() only stops a server that is running: wait until it is, so that a stop right after
  // start does not leave the thread listening forever.
  while (!impl->server.is_running() && !impl->listen_returned) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!impl->server.is_running()) {
    impl->thread.join();
    return fail(ErrorCode::kOutput, "--serve " + where + ": the server stopped as it started");
  }
  return std::unique_ptr<WebServer>(new WebServer(std::move(impl)));
}

int WebServer::port() const { return impl_->port; }

void WebServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->stopping = true;
  impl_->config.board->close();
  impl_->server.stop();
  impl_->thread.join();
}

}  // namespace sd
