// One blocking connection to Redis (hiredis), with the streams commands the Redis source and sink
// need: XADD, consumer groups, XREADGROUP, XACK, XAUTOCLAIM for at-least-once delivery. Commands
// go through redisCommandArgv with explicit lengths, so keys and values may hold any byte (frames
// are binary protobuf). Not thread-safe: one client per thread.
//
// Failures come in two kinds. An error reply (NOGROUP, WRONGTYPE, ...) leaves the connection
// usable. A lost connection (reset, closed, no reply within the timeout) leaves it dead:
// connection_lost() says so, every later command fails at once, and reconnect() (with a Backoff
// between attempts) is the way back. Whether a command sent just before the loss took effect is
// unknown: an XADD may have been stored, an XACK applied, which at-least-once delivery tolerates.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "transport/redis_uri.h"

struct redisContext;
struct redisReply;

namespace sd::transport {

// Owns one hiredis reply (freeReplyObject). Read it with <hiredis/hiredis.h>'s fields.
class RedisReply {
 public:
  RedisReply() = default;
  explicit RedisReply(redisReply* reply) : reply_(reply) {}
  ~RedisReply();
  RedisReply(RedisReply&& other) noexcept : reply_(std::exchange(other.reply_, nullptr)) {}
  RedisReply& operator=(RedisReply&& other) noexcept;
  RedisReply(const RedisReply&) = delete;
  RedisReply& operator=(const RedisReply&) = delete;

  const redisReply* get() const { return reply_; }
  const redisReply* operator->() const { return reply_; }

 private:
  redisReply* reply_ = nullptr;
};

struct StreamEntry {
  std::string id;                                            // "1700000000000-0"
  std::vector<std::pair<std::string, std::string>> fields;   // empty: deleted after delivery
};

struct AutoClaimed {
  std::string next_start_id;            // "0-0" once the whole pending list has been scanned
  std::vector<StreamEntry> entries;     // now owned by the claiming consumer
  std::vector<std::string> deleted_ids; // pending but gone from the stream (Redis 7), dropped from the PEL
};

class RedisClient {
 public:
  // Connects (within `timeout`), sends AUTH when the URI has a password (`AUTH user password`,
  // or `AUTH password` for the default user), and checks the server answers PING. `timeout` also
  // bounds every later reply. Errors: kSource, one line naming the redacted URI and the problem.
  static Result<RedisClient> connect(const RedisUri& uri, std::chrono::milliseconds timeout);

  ~RedisClient();
  RedisClient(RedisClient&& other) noexcept;
  RedisClient& operator=(RedisClient&& other) noexcept;
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  const RedisUri& uri() const { return uri_; }
  // The connection is dead (see the file comment); true also for a moved-from client.
  bool connection_lost() const;
  // A new connection to the same server with the same AUTH and timeouts. On failure the client
  // stays lost and can try again.
  Status reconnect();

  // Any command, binary-safe. An error reply becomes an Error (kSource) with the reply's text.
  Result<RedisReply> command(std::initializer_list<std::string_view> args);
  Result<RedisReply> command(const std::vector<std::string_view>& args);

  // XADD stream [MAXLEN ~ maxlen_approx] * field value ...: the new entry's id. maxlen_approx 0:
  // no trimming.
  Result<std::string> xadd(std::string_view stream, int64_t maxlen_approx,
                           const std::vector<std::pair<std::string_view, std::string_view>>& fields);
  // XGROUP CREATE stream group start_id MKSTREAM; a group that exists already (BUSYGROUP) is
  // success. start_id "$": new entries only; "0": the whole stream.
  Status xgroup_create(std::string_view stream, std::string_view group, std::string_view start_id);
  // XREADGROUP GROUP group consumer COUNT count [BLOCK block_ms] STREAMS stream id. id ">": new
  // entries; "0": this consumer's pending ones (an entry deleted since comes back with no
  // fields). block_ms 0: do not block (there is no "forever": a stage must be able to stop).
  // Empty when nothing arrived; Redis notices the end of a block in its cron, so that empty
  // reply comes up to 100 ms (at its default hz 10) after block_ms.
  Result<std::vector<StreamEntry>> xreadgroup(std::string_view group, std::string_view consumer, std::string_view stream,
                                              int64_t count, int64_t block_ms, std::string_view id);
  // XACK: how many of `ids` were pending (and no longer are).
  Result<int64_t> xack(std::string_view stream, std::string_view group, const std::vector<std::string>& ids);
  // XAUTOCLAIM stream group consumer min_idle_ms start_id COUNT count.
  Result<AutoClaimed> xautoclaim(std::string_view stream, std::string_view group, std::string_view consumer,
                                 int64_t min_idle_ms, std::string_view start_id, int64_t count);
  // The number of entries delivered to the group and not yet acknowledged.
  Result<int64_t> xpending_count(std::string_view stream, std::string_view group);
  // The number of those pending on one consumer (0 when it has none, or is unknown to the group).
  Result<int64_t> xpending_count_of(std::string_view stream, std::string_view group, std::string_view consumer);
  Result<int64_t> xlen(std::string_view stream);

 private:
  RedisClient(redisContext* context, RedisUri uri, std::chrono::milliseconds timeout);
  // Sends a command and reads its reply; only a lost connection is an error here, an error reply
  // is returned as it came. `what` names the command in messages ("XADD frames"): never the
  // arguments as such, which may hold a password or a frame.
  Result<RedisReply> send(const std::vector<std::string_view>& args, const std::string& what,
                          std::chrono::milliseconds reply_timeout);
  // send(), with an error reply as an Error.
  Result<RedisReply> run(const std::vector<std::string_view>& args, const std::string& what,
                         std::chrono::milliseconds reply_timeout);
  tl::unexpected<Error> failure(const std::string& what, const std::string& problem) const;

  redisContext* context_ = nullptr;
  RedisUri uri_;
  std::chrono::milliseconds timeout_{0};
};

}  // namespace sd::transport
