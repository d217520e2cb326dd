#include "serve/connection_gate.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>

namespace sd {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Open files the run needs beside the waiting connections: its inputs and outputs, the workers'
// connections, the libraries' own (a few tens in practice).
constexpr rlim_t kFilesForTheRest = 256;
// accept() failing for want of a file descriptor with none waiting to close: try again after this.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

// Raises the soft limit on open files to what max_waiting needs (at most the hard limit); returns
// how many connections may wait within the limit then in force.
size_t fit_to_file_limit(size_t max_waiting) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return max_waiting;
  const rlim_t wanted = static_cast<rlim_t>(max_waiting) + kFilesForTheRest;
  if (limit.rlim_cur < wanted) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(limit.rlim_max, wanted);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur >= wanted) return max_waiting;
  constexpr size_t kAtLeast = 8;
  return std::max(kAtLeast, static_cast<size_t>(limit.rlim_cur > kFilesForTheRest ? limit.rlim_cur - kFilesForTheRest : 0));
}

UniqueFd bind_and_listen(const addrinfo& a) {
  UniqueFd fd(::socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a.ai_protocol));
  if (!fd) return fd;
  int yes = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);  // a restart binds at once
  if (a.ai_family == AF_INET6) {  // [::] takes IPv4 too, as cpp-httplib did
    int no = 0;
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
  }
  // SOMAXCONN: a burst of connections waits in the kernel for the gate, not in SYN retries.
  if (::bind(fd.get(), a.ai_addr, a.ai_addrlen) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) fd.reset();
  return fd;
}

int bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return -1;
}

struct Waiting {
  UniqueFd socket;
  std::string head;
  SteadyClock::time_point deadline;
};

bool head_complete(const std::string& head) {
  return head.find("\r\n\r\n") != std::string::npos || head.find("\n\n") != std::string::npos;
}

// Reads what has arrived; false when the client closed its side (perhaps right after a whole
// request: `nc -N`, a half-close) or the connection failed.
bool read_arrived(Waiting& w, size_t max_head_bytes) {
  char buffer[4096];
  while (w.head.size() < max_head_bytes) {
    const ssize_t n = ::recv(w.socket.get(), buffer, sizeof buffer, 0);
    if (n > 0) {
      w.head.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<ConnectionGate>> ConnectionGate::listen(const std::string& host, int port, GateLimits limits) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) return fail(ErrorCode::kOutput, host + ": " + ::gai_strerror(rc));
  UniqueFd listener;
  int error = 0;
  for (addrinfo* a = found; a && !listener; a = a->ai_next) {
    listener = bind_and_listen(*a);
    if (!listener) error = errno;
  }
  ::freeaddrinfo(found);
  if (!listener) return fail(ErrorCode::kOutput, std::string("cannot listen: ") + std::strerror(error));
  UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake) return fail(ErrorCode::kOutput, std::string("eventfd: ") + std::strerror(errno));
  limits.max_waiting = fit_to_file_limit(limits.max_waiting);
  const int bound = bound_port(listener.get());
  return std::unique_ptr<ConnectionGate>(new ConnectionGate(std::move(listener), std::move(wake), bound, limits));
}

ConnectionGate::ConnectionGate(UniqueFd listener, UniqueFd wake, int port, GateLimits limits)
    : listener_(std::move(listener)), wake_(std::move(wake)), port_(port), limits_(limits) {}

ConnectionGate::~ConnectionGate() { stop(); }

void ConnectionGate::start(Handler ready) {
  ready_ = std::move(ready);
  thread_ = std::thread([this] { loop(); });
}

void ConnectionGate::stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_.get(), &one, sizeof one);
    thread_.join();
  }
  listener_.reset();
}

void ConnectionGate::loop() {
  std::vector<Waiting> waiting;  // oldest first, so deadlines in order
  std::vector<pollfd> polled;
  SteadyClock::time_point accept_paused_until{};
  while (true) {
    auto now = SteadyClock::now();
    const auto expired = std::find_if(waiting.begin(), waiting.end(), [&](const Waiting& w) { return w.deadline > now; });
    waiting.erase(waiting.begin(), expired);  // no head in time: closed

    const bool accepting = now >= accept_paused_until;
    polled.clear();
    polled.push_back({wake_.get(), POLLIN, 0});
    polled.push_back({accepting ? listener_.get() : -1, POLLIN, 0});  // a negative fd: not polled
    for (const Waiting& w : waiting) polled.push_back({w.socket.get(), POLLIN, 0});
    std::optional<SteadyClock::time_point> wake_at;
    if (!waiting.empty()) wake_at = waiting.front().deadline;
    if (!accepting) wake_at = std::min(wake_at.value_or(accept_paused_until), accept_paused_until);
    int timeout_ms = -1;  // none waiting: until something happens
    if (wake_at)
      timeout_ms = std::max(0, static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(*wake_at - now).count()));
    if (::poll(polled.data(), polled.size(), timeout_ms) < 0) continue;  // EINTR
    if (polled[0].revents != 0) return;  // stop(): `waiting` closes them all

    for (size_t i = 0; i < waiting.size(); ++i) {
      if (polled[i + 2].revents == 0) continue;
      Waiting& w = waiting[i];
      const bool open = read_arrived(w, limits_.max_head_bytes);
      if (head_complete(w.head) || w.head.size() >= limits_.max_head_bytes)
        ready_(Arrival{std::move(w.socket), std::move(w.head)});
      else if (!open)
        w.socket.reset();  // the client left before its request was whole
    }
    std::erase_if(waiting, [](const Waiting& w) { return !w.socket; });

    if (!accepting || (polled[1].revents & POLLIN) == 0) continue;
    now = SteadyClock::now();
    while (true) {
      UniqueFd socket(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!socket) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          if (!waiting.empty()) {  // out of file descriptors: the oldest waiting makes room
            waiting.erase(waiting.begin());
            continue;
          }
          accept_paused_until = now + kAcceptPause;
        }
        break;  // EAGAIN: none left
      }
      if (waiting.size() >= limits_.max_waiting) waiting.erase(waiting.begin());
      waiting.push_back(Waiting{std::move(socket), {}, now + limits_.head_timeout});
    }
  }
}

}  // namespace sd
