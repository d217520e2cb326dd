// One accepted connection as cpp-httplib's Stream, for the web server's workers: the bytes the
// connection gate already read (the request's head, and whatever followed it) come first, then the
// socket. Reads and writes wait at most their timeouts (a client that stops reading or sending
// frees the worker), and stop at once when the connection is shut down (the server stopping).
#pragma once

#include <chrono>
#include <string>

#include <httplib.h>

namespace sd {

class SocketStream final : public httplib::Stream {
 public:
  SocketStream(int fd, std::string already_read, std::chrono::milliseconds read_timeout,
               std::chrono::milliseconds write_timeout);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  int fd_;  // not owned
  std::string buffered_;
  size_t buffered_at_ = 0;
  std::chrono::milliseconds read_timeout_;
  std::chrono::milliseconds write_timeout_;
};

}  // namespace sd
