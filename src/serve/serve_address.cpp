#include "serve/serve_address.h"

#include <charconv>

namespace sd {

Result<ServeAddress> parse_serve_address(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return fail(ErrorCode::kUsage, "--serve '" + text + "': " + why + " (expected [host:]port, e.g. 8080 or 0.0.0.0:8080)");
  };
  ServeAddress a;
  std::string port = text;
  if (!text.empty() && text.front() == '[') {  // [v6 address]:port
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') return bad("an IPv6 host needs ]:port");
    a.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else if (const size_t colon = text.rfind(':'); colon != std::string::npos) {
    if (text.find(':') != colon) return bad("write an IPv6 host in brackets, [::1]:8080");
    if (colon > 0) a.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (a.host.empty()) return bad("empty host");
  if (port.empty()) return bad("no port");
  int value = -1;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value < 0 || value > 65535)
    return bad("the port must be a number from 0 (any free port) to 65535");
  a.port = value;
  return a;
}

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace sd
