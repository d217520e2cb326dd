#include "transport/redis_uri.h"

#include <charconv>

namespace sd::transport {
namespace {

constexpr char kHex[] = "0123456789ABCDEF";
constexpr std::string_view kForm = "redis://[user:password@]host[:port]/stream[?key=value&...]";

bool is_unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

// Percent-encodes every byte for which `keep` is false: what comes out is one printable line.
template <class Keep>
std::string percent_encode_unless(std::string_view s, Keep keep) {
  std::string out;
  for (unsigned char c : s) {
    if (keep(c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Every byte but the unreserved ones and those in `keep` encoded: parses back to the same bytes.
std::string encode(std::string_view s, std::string_view keep) {
  return percent_encode_unless(s, [&](unsigned char c) { return is_unreserved(c) || keep.find(static_cast<char>(c)) != std::string_view::npos; });
}

// Printable as typed: only spaces, control and non-ASCII bytes encoded.
std::string printable(std::string_view s) {
  return percent_encode_unless(s, [](unsigned char c) { return c > 0x20 && c < 0x7f; });
}

// The URI as typed with its password replaced, for messages about a URI that did not parse. It
// splits userinfo exactly as the parser does (to the last '@', user before the first ':', no ':'
// meaning a password alone), so whatever the parser would take as the password is never shown.
std::string redact_raw(std::string_view uri) {
  const size_t sep = uri.find("://");
  const size_t start = sep == std::string_view::npos ? 0 : sep + 3;
  const size_t at = uri.rfind('@');
  if (at == std::string_view::npos || at < start) return printable(uri);
  const std::string_view userinfo = uri.substr(start, at - start);
  const size_t colon = userinfo.find(':');
  std::string out(uri.substr(0, start));
  if (colon != std::string_view::npos) out += std::string(userinfo.substr(0, colon)) + ":";
  out += "***";
  out += uri.substr(at);
  return printable(out);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

bool valid_host_name(std::string_view h) {
  for (unsigned char c : h)
    if (!(is_unreserved(c) && c != '~')) return false;
  return true;
}

bool valid_ipv6(std::string_view h) {
  if (h.empty()) return false;
  for (char c : h)
    if (hex_value(c) < 0 && c != ':' && c != '.') return false;
  return true;
}

std::optional<int> parse_port(std::string_view s) {
  int port = 0;
  if (s.empty() || s.size() > 5) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  if (ec != std::errc() || end != s.data() + s.size() || port < 1 || port > 65535) return std::nullopt;
  return port;
}

// Shown in messages: a value as given, printable and cut to a line's worth.
std::string shown(std::string_view v) {
  std::string p = printable(v.substr(0, 64));
  if (v.size() > 64) p += "...";
  return p;
}

}  // namespace

std::string RedisUri::redacted() const {
  std::string out = "redis://";
  if (!user.empty() || !password.empty()) {
    out += encode(user, "");
    if (!password.empty()) out += ":***";
    out += '@';
  }
  out += host.find(':') != std::string::npos ? "[" + printable(host) + "]" : printable(host);
  out += ':' + std::to_string(port) + '/' + encode(stream, "/:");
  char sep = '?';
  for (const auto& [k, v] : query) {
    out += sep + encode(k, "") + '=' + encode(v, "/:");
    sep = '&';
  }
  return out;
}

Result<RedisUri> parse_redis_uri(std::string_view text, std::optional<std::string> default_password) {
  auto bad = [&](const std::string& problem) { return fail(ErrorCode::kUsage, "redis URI " + redact_raw(text) + ": " + problem); };
  for (unsigned char c : text)
    if (c <= 0x20 || c == 0x7f) return bad("contains a space or a control character");

  const size_t sep = text.find("://");
  if (sep == std::string_view::npos) return bad("is not of the form " + std::string(kForm));
  std::string scheme(text.substr(0, sep));
  for (char& c : scheme) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (scheme == "rediss") return bad("TLS (rediss://) is not supported: this build's hiredis (0.14) has no TLS");
  if (scheme != "redis") return bad("unknown scheme '" + shown(scheme) + "' (redis:// is the one supported)");

  RedisUri uri;
  std::string_view rest = text.substr(sep + 3);
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    const size_t colon = userinfo.find(':');
    std::optional<std::string> user = colon == std::string_view::npos ? std::string() : percent_decode(userinfo.substr(0, colon));
    std::optional<std::string> password = percent_decode(colon == std::string_view::npos ? userinfo : userinfo.substr(colon + 1));
    if (!user) return bad("bad percent-encoding in the user name");
    if (!password) return bad("bad percent-encoding in the password");
    uri.user = std::move(*user);
    uri.password = std::move(*password);
    rest = rest.substr(at + 1);
  }

  const size_t slash = rest.find('/');
  const size_t question = rest.find('?');
  if (slash == std::string_view::npos || (question != std::string_view::npos && question < slash))
    return bad("names no stream (" + std::string(kForm) + ")");
  std::string_view authority = rest.substr(0, slash);
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos || !valid_ipv6(authority.substr(1, close - 1))) return bad("bad IPv6 host (write it as [::1])");
    uri.host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad("unexpected text after the IPv6 host");
      port_text = after.substr(1);
      if (port_text.empty()) return bad("bad port '' (1 to 65535)");
    }
  } else {
    const size_t colon = authority.find(':');
    if (colon != std::string_view::npos && authority.find(':', colon + 1) != std::string_view::npos)
      return bad("an IPv6 host must be in brackets ([::1])");
    std::string_view host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return bad("bad port '' (1 to 65535)");
    }
    if (!valid_host_name(host)) return bad("bad host '" + shown(host) + "'");
    if (!host.empty()) uri.host = std::string(host);
  }
  if (!port_text.empty()) {
    const std::optional<int> port = parse_port(port_text);
    if (!port) return bad("bad port '" + shown(port_text) + "' (1 to 65535)");
    uri.port = *port;
  }

  rest = rest.substr(slash + 1);
  const size_t q = rest.find('?');
  std::optional<std::string> stream = percent_decode(rest.substr(0, q));
  if (!stream) return bad("bad percent-encoding in the stream name");
  if (stream->empty()) return bad("names no stream (" + std::string(kForm) + ")");
  uri.stream = std::move(*stream);

  if (q != std::string_view::npos) {
    std::string_view query = rest.substr(q + 1);
    while (!query.empty()) {
      const size_t amp = query.find('&');
      const std::string_view item = query.substr(0, amp);
      query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
      if (item.empty()) continue;
      const size_t eq = item.find('=');
      std::optional<std::string> key = percent_decode(item.substr(0, eq));
      std::optional<std::string> value = eq == std::string_view::npos ? std::string() : percent_decode(item.substr(eq + 1));
      if (!key || !value) return bad("bad percent-encoding in the query '" + shown(item) + "'");
      if (key->empty()) return bad("a query parameter has no name");
      if (uri.query.count(*key)) return bad("repeats the query parameter '" + shown(*key) + "'");
      uri.query.emplace(std::move(*key), std::move(*value));
    }
  }

  if (uri.password.empty() && default_password) uri.password = std::move(*default_password);
  if (!uri.user.empty() && uri.password.empty())
    return bad("user '" + shown(uri.user) + "' needs a password (in the URI, or REDISCLI_AUTH)");
  return uri;
}

Result<int64_t> query_int(const RedisUri& uri, std::string_view key, int64_t fallback, int64_t min, int64_t max) {
  const auto it = uri.query.find(std::string(key));
  if (it == uri.query.end()) return fallback;
  const std::string& v = it->second;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || value < min || value > max)
    return fail(ErrorCode::kUsage, "redis URI " + uri.redacted() + ": query parameter '" + shown(key) + "' must be an integer from " +
                                       std::to_string(min) + " to " + std::to_string(max) + ", got '" + shown(v) + "'");
  return value;
}

std::string query_str(const RedisUri& uri, std::string_view key, std::string_view fallback) {
  const auto it = uri.query.find(std::string(key));
  return it == uri.query.end() ? std::string(fallback) : it->second;
}

Status check_query_keys(const RedisUri& uri, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : uri.query) {
    bool known = false;
    for (std::string_view a : allowed) known = known || a == key;
    if (known) continue;
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    return fail(ErrorCode::kUsage, "redis URI " + uri.redacted() + ": unknown query parameter '" + shown(key) + "' (known: " +
                                       (list.empty() ? "none" : list) + ")");
  }
  return ok();
}

}  // namespace sd::transport
