// Redis URIs (transport/redis_uri.h): the forms users write are understood, a mistake is named in
// one line, and the password appears in no message and no redacted URI, however the URI is
// broken.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transport/redis_uri.h"

namespace sd::transport {
namespace {

RedisUri parsed(std::string_view text, std::optional<std::string> default_password = std::nullopt) {
  auto uri = parse_redis_uri(text, std::move(default_password));
  EXPECT_TRUE(uri) << text << ": " << uri.error().message;
  return uri ? *uri : RedisUri{};
}

TEST(RedisUri, HostPortStreamAndDefaults) {
  RedisUri a = parsed("redis://10.0.0.5:6380/frames");
  EXPECT_EQ(a.host, "10.0.0.5");
  EXPECT_EQ(a.port, 6380);
  EXPECT_EQ(a.stream, "frames");
  EXPECT_TRUE(a.user.empty());
  EXPECT_TRUE(a.password.empty());
  EXPECT_TRUE(a.query.empty());

  RedisUri b = parsed("REDIS://redis-1.example.org/frames");
  EXPECT_EQ(b.host, "redis-1.example.org");
  EXPECT_EQ(b.port, 6379);

  RedisUri local = parsed("redis:///frames");
  EXPECT_EQ(local.host, "127.0.0.1");
  EXPECT_EQ(local.port, 6379);

  EXPECT_EQ(parsed("redis://[::1]:7000/s").host, "::1");
  EXPECT_EQ(parsed("redis://[::1]:7000/s").port, 7000);
  EXPECT_EQ(parsed("redis://[fe80::1]/s").host, "fe80::1");
}

TEST(RedisUri, UserPasswordAndPercentEncoding) {
  RedisUri a = parsed("redis://alice:s3cr%40t@db:7000/cams%2Ffront?group=g%201&count=10");
  EXPECT_EQ(a.user, "alice");
  EXPECT_EQ(a.password, "s3cr@t");
  EXPECT_EQ(a.host, "db");
  EXPECT_EQ(a.stream, "cams/front");
  EXPECT_EQ(a.query.at("group"), "g 1");
  EXPECT_EQ(a.query.at("count"), "10");

  RedisUri pw_only = parsed("redis://:hunter2@db/s");
  EXPECT_TRUE(pw_only.user.empty());
  EXPECT_EQ(pw_only.password, "hunter2");
  // As in redis-cli: userinfo without ':' is a password.
  RedisUri bare = parsed("redis://hunter2@db/s");
  EXPECT_TRUE(bare.user.empty());
  EXPECT_EQ(bare.password, "hunter2");

  // A generated password may hold '/', '?', '#', '@' unencoded: userinfo runs to the last '@'.
  EXPECT_EQ(parsed("redis://:a/b?c#d@e@db/s").password, "a/b?c#d@e");
  EXPECT_EQ(parsed("redis://:a/b?c#d@e@db/s").host, "db");

  // Keys are binary-safe: any byte may be percent-encoded into the stream's name.
  EXPECT_EQ(parsed("redis://db/a%00b%FF").stream, std::string("a\0b\xff", 4));
  EXPECT_EQ(parsed("redis://db/cams/front").stream, "cams/front");
  EXPECT_EQ(parsed("redis://db/s?flag").query.at("flag"), "");
}

TEST(RedisUri, TheDefaultPasswordFillsInOnlyWhenTheUriHasNone) {
  EXPECT_EQ(parsed("redis://db/s", "from-env").password, "from-env");
  EXPECT_EQ(parsed("redis://:from-uri@db/s", "from-env").password, "from-uri");
  RedisUri user = parsed("redis://alice:@db/s", "from-env");
  EXPECT_EQ(user.user, "alice");
  EXPECT_EQ(user.password, "from-env");
  EXPECT_TRUE(parsed("redis://db/s", std::nullopt).password.empty());
}

TEST(RedisUri, MistakesAreUsageErrorsNamingTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "is not of the form redis://"},
      {"localhost:6379/frames", "is not of the form"},
      {"http://db/frames", "unknown scheme 'http'"},
      {"rediss://db/frames", "TLS (rediss://) is not supported"},
      {"redis://db", "names no stream"},
      {"redis://db/", "names no stream"},
      {"redis://db?count=1", "names no stream"},
      {"redis://db:0/s", "bad port '0' (1 to 65535)"},
      {"redis://db:65536/s", "bad port '65536'"},
      {"redis://db:http/s", "bad port 'http'"},
      {"redis://db:/s", "bad port ''"},
      {"redis://[::1]:/s", "bad port ''"},
      {"redis://db:-1/s", "bad port '-1'"},
      {"redis://::1/s", "an IPv6 host must be in brackets"},
      {"redis://[::1/s", "bad IPv6 host"},
      {"redis://[xyz]/s", "bad IPv6 host"},
      {"redis://[::1]x/s", "unexpected text after the IPv6 host"},
      {"redis://d!b/s", "bad host 'd!b'"},
      {"redis://db/s%zz", "bad percent-encoding in the stream name"},
      {"redis://db/s%4", "bad percent-encoding in the stream name"},
      {"redis://a%zz:pw@db/s", "bad percent-encoding in the user name"},
      {"redis://db/s?a=1&a=2", "repeats the query parameter 'a'"},
      {"redis://db/s?=1", "a query parameter has no name"},
      {"redis://db/s?a=%zz", "bad percent-encoding in the query 'a=%zz'"},
      {"redis://db /s", "contains a space or a control character"},
      {"redis://db/s\n", "contains a space or a control character"},
      {"redis://alice:@db/s", "user 'alice' needs a password"},
  };
  for (const auto& [text, problem] : cases) {
    auto uri = parse_redis_uri(text, std::nullopt);
    ASSERT_FALSE(uri) << text;
    EXPECT_EQ(uri.error().code, ErrorCode::kUsage) << text;
    EXPECT_NE(uri.error().message.find(problem), std::string::npos) << text << " -> " << uri.error().message;
    EXPECT_EQ(uri.error().message.find('\n'), std::string::npos) << uri.error().message;
    EXPECT_EQ(uri.error().message.rfind("redis URI ", 0), 0u) << uri.error().message;
  }
}

TEST(RedisUri, ThePasswordIsInNoMessageAndNoRedactedUri) {
  const std::string secret = "Sup3rS3cret";
  const std::vector<std::string> bad = {
      "redis://u:Sup3rS3cret@db:99999/s",   "redis://Sup3rS3cret@db/",          "http://u:Sup3rS3cret@db/s",
      "rediss://:Sup3rS3cret@db/s",         "redis://:Sup3rS3cret@[::1/s",     "redis://u:Sup3rS3cret@db/s%zz",
      "redis://u:Sup3r%zzS3cret@db/s",      "redis://u:Sup3r S3cret@db/s",     "u:Sup3rS3cret@db/s",
      "redis://:Sup3r/S3cret@db",           "redis://:Sup3rS3cret@db/s?a&a",   "redis://:x@Sup3rS3cret@db:0/s",
      "redis://u:Sup3rS3cret@d!b/s",        "redis:/u:Sup3rS3cret@db/s",
  };
  for (const std::string& text : bad) {
    auto uri = parse_redis_uri(text, std::nullopt);
    ASSERT_FALSE(uri) << text;
    EXPECT_EQ(uri.error().message.find("Sup3r"), std::string::npos) << uri.error().message;
    EXPECT_EQ(uri.error().message.find("S3cret"), std::string::npos) << uri.error().message;
  }
  RedisUri good = parsed("redis://alice:" + secret + "@db:7000/s?count=x&zz=1");
  EXPECT_EQ(good.password, secret);
  EXPECT_EQ(good.redacted(), "redis://alice:***@db:7000/s?count=x&zz=1");
  auto count = query_int(good, "count", 1, 1, 10);
  ASSERT_FALSE(count);
  EXPECT_EQ(count.error().message.find(secret), std::string::npos) << count.error().message;
  auto keys = check_query_keys(good, {"count"});
  ASSERT_FALSE(keys);
  EXPECT_EQ(keys.error().message.find(secret), std::string::npos) << keys.error().message;
  // A password from the environment is no more shown than one in the URI.
  EXPECT_EQ(parsed("redis://db/s", secret).redacted(), "redis://:***@db:6379/s");
}

TEST(RedisUri, RedactedIsOnePrintableLine) {
  EXPECT_EQ(parsed("redis://db/frames").redacted(), "redis://db:6379/frames");
  EXPECT_EQ(parsed("redis://:pw@[::1]:7000/cams/front").redacted(), "redis://:***@[::1]:7000/cams/front");
  EXPECT_EQ(parsed("redis://db/a%0Ab%40c?k%26=v%3D").redacted(), "redis://db:6379/a%0Ab%40c?k%26=v%3D");
  // The redacted form parses back to the same place.
  RedisUri round = parsed(parsed("redis://db:7000/a%0Ab%40c%20d?k%26=v%3D").redacted());
  EXPECT_EQ(round.stream, "a\nb@c d");
  EXPECT_EQ(round.query.at("k&"), "v=");
  EXPECT_EQ(round.port, 7000);
}

TEST(RedisUri, QueryParameters) {
  RedisUri uri = parsed("redis://db/s?count=32&block_ms=abc&big=99999999999999999999&group=detectors");
  auto count = query_int(uri, "count", 10, 1, 1000);
  ASSERT_TRUE(count) << count.error().message;
  EXPECT_EQ(*count, 32);
  auto missing = query_int(uri, "maxlen", 5000, 0, 1000000);
  ASSERT_TRUE(missing);
  EXPECT_EQ(*missing, 5000);

  auto text = query_int(uri, "block_ms", 100, 1, 60000);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, ErrorCode::kUsage);
  EXPECT_NE(text.error().message.find("query parameter 'block_ms' must be an integer from 1 to 60000, got 'abc'"), std::string::npos)
      << text.error().message;
  EXPECT_FALSE(query_int(uri, "count", 10, 100, 1000));  // out of range
  EXPECT_FALSE(query_int(uri, "big", 0, 0, INT64_MAX));  // overflows int64
  EXPECT_FALSE(query_int(parsed("redis://db/s?n="), "n", 0, 0, 10));
  EXPECT_FALSE(query_int(parsed("redis://db/s?n=5x"), "n", 0, 0, 10));
  EXPECT_FALSE(query_int(parsed("redis://db/s?n=+5"), "n", 0, 0, 10));

  EXPECT_EQ(query_str(uri, "group", "streamdet"), "detectors");
  EXPECT_EQ(query_str(uri, "consumer", "host-1"), "host-1");

  EXPECT_TRUE(check_query_keys(uri, {"count", "block_ms", "big", "group"}));
  auto unknown = check_query_keys(uri, {"count", "block_ms", "group"});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::kUsage);
  EXPECT_NE(unknown.error().message.find("unknown query parameter 'big' (known: count, block_ms, group)"), std::string::npos)
      << unknown.error().message;
  EXPECT_TRUE(check_query_keys(parsed("redis://db/s"), {}));
}

}  // namespace
}  // namespace sd::transport
