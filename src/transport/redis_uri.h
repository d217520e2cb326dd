// Where a Redis stream is: redis://[user:password@]host[:port]/STREAM[?key=value&...], parsed and
// checked, with typed access to the query parameters. The password never appears in a message or
// in redacted(): URIs end up in logs, error lines and dead-letter entries.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace sd::transport {

struct RedisUri {
  std::string host = "127.0.0.1";  // an IPv6 address without its brackets
  int port = 6379;
  std::string user;                // empty: the default user (AUTH with the password alone)
  std::string password;            // empty: no AUTH
  std::string stream;              // the stream's key, percent-decoded (may hold any byte)
  std::map<std::string, std::string> query;

  // redis://user:***@host:port/stream?key=value, re-encoded so that it is one printable line;
  // "***" stands for any password, whatever its length.
  std::string redacted() const;
};

// Parses `uri`. Userinfo runs to the last '@' (so a password may hold '/', '?', '#' or '@'
// unencoded); a '@' in the stream or the query must then be written %40. As in redis-cli,
// userinfo without ':' is the password of the default user. `default_password` (the app passes
// REDISCLI_AUTH) is used when the URI gives none. An empty host is 127.0.0.1. Errors: kUsage, one
// line naming the URI redacted and the problem.
Result<RedisUri> parse_redis_uri(std::string_view uri, std::optional<std::string> default_password);

// Query parameters. A missing key gives the fallback; a present one must be a whole integer in
// [min, max] (kUsage naming the URI, the key, the range and the text otherwise).
Result<int64_t> query_int(const RedisUri& uri, std::string_view key, int64_t fallback, int64_t min, int64_t max);
std::string query_str(const RedisUri& uri, std::string_view key, std::string_view fallback);
// kUsage naming the first key not in `allowed` (a typo must not silently fall back to a default).
Status check_query_keys(const RedisUri& uri, std::initializer_list<std::string_view> allowed);

}  // namespace sd::transport
