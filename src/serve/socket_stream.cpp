#include "serve/socket_stream.h"

#include <cerrno>
#include <cstring>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

namespace sd {
namespace {

// Waits until fd is ready for `events` (POLLIN or POLLOUT), up to timeout; false on timeout, on
// an error or a hang-up with nothing left to read.
bool wait_for(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{fd, events, 0};
  int n;
  do {
    n = ::poll(&p, 1, static_cast<int>(timeout.count()));
  } while (n < 0 && errno == EINTR);
  return n > 0 && (p.revents & (events | POLLHUP)) != 0 && (p.revents & POLLNVAL) == 0;
}

void address_of(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  auto* a = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? ::getpeername(fd, a, &len) : ::getsockname(fd, a, &len)) != 0) return;
  char host[NI_MAXHOST];
  char service[NI_MAXSERV];
  if (::getnameinfo(a, len, host, sizeof host, service, sizeof service, NI_NUMERICHOST | NI_NUMERICSERV) != 0) return;
  ip = host;
  port = std::atoi(service);
}

}  // namespace

SocketStream::SocketStream(int fd, std::string already_read, std::chrono::milliseconds read_timeout,
                           std::chrono::milliseconds write_timeout)
    : fd_(fd), buffered_(std::move(already_read)), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

bool SocketStream::is_readable() const {
  return buffered_at_ < buffered_.size() || wait_for(fd_, POLLIN, read_timeout_);
}

bool SocketStream::is_writable() const { return wait_for(fd_, POLLOUT, write_timeout_); }

ssize_t SocketStream::read(char* ptr, size_t size) {
  if (buffered_at_ < buffered_.size()) {
    const size_t n = std::min(size, buffered_.size() - buffered_at_);
    std::memcpy(ptr, buffered_.data() + buffered_at_, n);
    buffered_at_ += n;
    return static_cast<ssize_t>(n);
  }
  while (true) {  // the socket is non-blocking: wait, then read what is there
    const ssize_t n = ::recv(fd_, ptr, size, 0);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if ((errno != EAGAIN && errno != EWOULDBLOCK) || !wait_for(fd_, POLLIN, read_timeout_)) return -1;
  }
}

ssize_t SocketStream::write(const char* ptr, size_t size) {
  while (true) {
    const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);  // a viewer who left: an error, not SIGPIPE
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if ((errno != EAGAIN && errno != EWOULDBLOCK) || !wait_for(fd_, POLLOUT, write_timeout_)) return -1;
  }
}

void SocketStream::get_remote_ip_and_port(std::string& ip, int& port) const { address_of(fd_, true, ip, port); }

void SocketStream::get_local_ip_and_port(std::string& ip, int& port) const { address_of(fd_, false, ip, port); }

}  // namespace sd
