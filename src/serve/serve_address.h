// --serve [host:]port: where the web server listens. The host is 127.0.0.1 unless given (only
// this machine can connect); port 0 takes any free port (the log line says which).
#pragma once

#include <string>

#include "core/error.h"

namespace sd {

struct ServeAddress {
  std::string host = "127.0.0.1";
  int port = 0;
};

// "8080", "0.0.0.0:8080", "[::1]:8080", "localhost:8080". Errors: kUsage, one line.
Result<ServeAddress> parse_serve_address(const std::string& text);

// 127.0.0.0/8, ::1, localhost: only this machine can connect.
bool is_loopback_host(const std::string& host);

}  // namespace sd
