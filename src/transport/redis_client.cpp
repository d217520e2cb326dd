#include "transport/redis_client.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctime>

namespace sd::transport {
namespace {

constexpr std::chrono::milliseconds kBlockSlack(1000);

timeval to_timeval(std::chrono::milliseconds ms) {
  const int64_t n = std::max<int64_t>(ms.count(), 1);
  return timeval{static_cast<time_t>(n / 1000), static_cast<suseconds_t>((n % 1000) * 1000)};
}

// A key or a reply's text in a message: printable, on one line, cut to a line's worth.
std::string shown(std::string_view s, size_t limit = 96) {
  std::string out;
  for (unsigned char c : s.substr(0, limit)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > limit) out += "...";
  return out;
}

// hiredis writes with write(): a server that goes away while a command is being sent raises
// SIGPIPE, whose default action ends the process. Blocked in this thread for the command, and one
// raised meanwhile consumed (as libpq does), so the loss comes back as EPIPE, an error like any
// other. A SIGPIPE that was pending before is left alone.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  }
  ~SigpipeGuard() {
    sigset_t pending;
    if (!was_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
      const timespec zero{};
      sigtimedwait(&pipe_, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_{}, old_{};
  bool was_pending_ = false;
};

bool is_string(const redisReply* r) { return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS); }
std::string text(const redisReply* r) { return std::string(r->str, r->len); }

// One entry of XREADGROUP's or XAUTOCLAIM's reply: [id, [field, value, ...]], the fields nil for
// an entry deleted after it was delivered.
bool parse_entry(const redisReply* e, StreamEntry& out) {
  if (!e || e->type != REDIS_REPLY_ARRAY || e->elements != 2 || !is_string(e->element[0])) return false;
  out.id = text(e->element[0]);
  out.fields.clear();
  const redisReply* f = e->element[1];
  if (f->type == REDIS_REPLY_NIL) return true;
  if (f->type != REDIS_REPLY_ARRAY || f->elements % 2 != 0) return false;
  out.fields.reserve(f->elements / 2);
  for (size_t i = 0; i < f->elements; i += 2) {
    if (!is_string(f->element[i]) || !is_string(f->element[i + 1])) return false;
    out.fields.emplace_back(text(f->element[i]), text(f->element[i + 1]));
  }
  return true;
}

// A list of entries; a nil in place of an entry (XAUTOCLAIM before Redis 7, for an entry deleted
// meanwhile) is skipped: it has no id to act on.
bool parse_entries(const redisReply* list, std::vector<StreamEntry>& out) {
  if (!list || list->type != REDIS_REPLY_ARRAY) return false;
  for (size_t i = 0; i < list->elements; ++i) {
    if (list->element[i]->type == REDIS_REPLY_NIL) continue;
    StreamEntry entry;
    if (!parse_entry(list->element[i], entry)) return false;
    out.push_back(std::move(entry));
  }
  return true;
}

const char* type_name(const redisReply* r) {
  switch (r->type) {
    case REDIS_REPLY_STRING: return "string";
    case REDIS_REPLY_ARRAY: return "array";
    case REDIS_REPLY_INTEGER: return "integer";
    case REDIS_REPLY_NIL: return "nil";
    case REDIS_REPLY_STATUS: return "status";
    case REDIS_REPLY_ERROR: return "error";
  }
  return "unknown";
}

}  // namespace

RedisReply::~RedisReply() {
  if (reply_) freeReplyObject(reply_);
}

RedisReply& RedisReply::operator=(RedisReply&& other) noexcept {
  if (this != &other) {
    if (reply_) freeReplyObject(reply_);
    reply_ = std::exchange(other.reply_, nullptr);
  }
  return *this;
}

RedisClient::RedisClient(redisContext* context, RedisUri uri, std::chrono::milliseconds timeout)
    : context_(context), uri_(std::move(uri)), timeout_(timeout) {}

RedisClient::~RedisClient() {
  if (context_) redisFree(context_);
}

RedisClient::RedisClient(RedisClient&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)), uri_(std::move(other.uri_)), timeout_(other.timeout_) {}

RedisClient& RedisClient::operator=(RedisClient&& other) noexcept {
  if (this != &other) {
    if (context_) redisFree(context_);
    context_ = std::exchange(other.context_, nullptr);
    uri_ = std::move(other.uri_);
    timeout_ = other.timeout_;
  }
  return *this;
}

tl::unexpected<Error> RedisClient::failure(const std::string& what, const std::string& problem) const {
  // Redis quotes arguments in some errors ("unknown command 'X', with args beginning with: ..."):
  // whatever it quotes, the password is not shown.
  std::string text = problem;
  const std::string secret = shown(uri_.password, 200);
  for (size_t at; !secret.empty() && (at = text.find(secret)) != std::string::npos;) text.replace(at, secret.size(), "***");
  return fail(ErrorCode::kSource, uri_.redacted() + ": " + what + ": " + text);
}

Result<RedisClient> RedisClient::connect(const RedisUri& uri, std::chrono::milliseconds timeout) {
  const timeval tv = to_timeval(timeout);
  redisContext* c = redisConnectWithTimeout(uri.host.c_str(), uri.port, tv);
  if (!c) return fail(ErrorCode::kSource, uri.redacted() + ": cannot connect: out of memory for a hiredis context");
  // Owned from here on, whatever happens next.
  RedisClient client(c, uri, timeout);
  if (c->err) return client.failure("cannot connect", c->errstr);
  // The connect timeout bounds the connection only; this one bounds every send and reply.
  if (redisSetTimeout(c, tv) != REDIS_OK) return client.failure("cannot set the socket timeout", c->errstr);
  // Detects a peer that vanished without closing (a host down, a cable out) on idle connections.
  redisEnableKeepAlive(c);
  if (!uri.password.empty()) {
    std::vector<std::string_view> auth = {"AUTH"};
    if (!uri.user.empty()) auth.push_back(uri.user);
    auth.push_back(uri.password);
    SD_TRY(client.run(auth, "AUTH", timeout));
  }
  // A server that wants a password we did not give says so here (NOAUTH), not at the first read.
  SD_TRY(client.run({"PING"}, "PING", timeout));
  return client;
}

bool RedisClient::connection_lost() const { return !context_ || context_->err != 0; }

Status RedisClient::reconnect() {
  SD_ASSIGN_OR_RETURN(RedisClient fresh, connect(uri_, timeout_));
  *this = std::move(fresh);
  return ok();
}

Result<RedisReply> RedisClient::send(const std::vector<std::string_view>& args, const std::string& what,
                                     std::chrono::milliseconds reply_timeout) {
  if (connection_lost()) return failure(what, "the connection was lost earlier (reconnect first)");
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  argv.reserve(args.size());
  lengths.reserve(args.size());
  for (std::string_view a : args) {
    argv.push_back(a.empty() ? "" : a.data());
    lengths.push_back(a.size());
  }
  // A blocking read (XREADGROUP BLOCK) waits longer than the usual reply timeout.
  const bool longer = reply_timeout > timeout_;
  if (longer && redisSetTimeout(context_, to_timeval(reply_timeout)) != REDIS_OK)
    return failure(what, std::string("cannot set the socket timeout: ") + context_->errstr);
  redisReply* reply = nullptr;
  int saved_errno = 0;
  {
    SigpipeGuard guard;
    reply = static_cast<redisReply*>(redisCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data()));
    saved_errno = errno;
  }
  RedisReply owned(reply);
  if (longer && !context_->err) redisSetTimeout(context_, to_timeval(timeout_));
  if (!reply) {
    // hiredis marks the context dead (context_->err) on any failure to send or read.
    if (context_->err == REDIS_ERR_IO && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK))
      return failure(what, "connection lost: no reply within " + std::to_string(reply_timeout.count()) + " ms");
    return failure(what, std::string("connection lost: ") + (context_->err ? context_->errstr : "no reply"));
  }
  return owned;
}

Result<RedisReply> RedisClient::run(const std::vector<std::string_view>& args, const std::string& what,
                                    std::chrono::milliseconds reply_timeout) {
  SD_ASSIGN_OR_RETURN(RedisReply reply, send(args, what, reply_timeout));
  if (reply->type == REDIS_REPLY_ERROR) return failure(what, shown(text(reply.get()), 200));
  return reply;
}

Result<RedisReply> RedisClient::command(std::initializer_list<std::string_view> args) {
  return command(std::vector<std::string_view>(args));
}

Result<RedisReply> RedisClient::command(const std::vector<std::string_view>& args) {
  if (args.empty()) return fail(ErrorCode::kInternal, uri_.redacted() + ": an empty Redis command");
  // Named by the command alone: its arguments may be a password or a frame.
  return run(args, shown(args.front(), 32), timeout_);
}

Result<std::string> RedisClient::xadd(std::string_view stream, int64_t maxlen_approx,
                                      const std::vector<std::pair<std::string_view, std::string_view>>& fields) {
  const std::string what = "XADD " + shown(stream);
  if (fields.empty()) return fail(ErrorCode::kInternal, uri_.redacted() + ": " + what + ": an entry needs at least one field");
  const std::string maxlen = std::to_string(maxlen_approx);
  std::vector<std::string_view> args = {"XADD", stream};
  if (maxlen_approx > 0) args.insert(args.end(), {"MAXLEN", "~", maxlen});
  args.push_back("*");
  for (const auto& [field, value] : fields) args.insert(args.end(), {field, value});
  SD_ASSIGN_OR_RETURN(RedisReply reply, run(args, what, timeout_));
  if (!is_string(reply.get())) return failure(what, std::string("unexpected ") + type_name(reply.get()) + " reply");
  return text(reply.get());
}

Status RedisClient::xgroup_create(std::string_view stream, std::string_view group, std::string_view start_id) {
  const std::string what = "XGROUP CREATE " + shown(stream) + " " + shown(group);
  SD_ASSIGN_OR_RETURN(RedisReply reply, send({"XGROUP", "CREATE", stream, group, start_id, "MKSTREAM"}, what, timeout_));
  if (reply->type == REDIS_REPLY_ERROR && text(reply.get()).rfind("BUSYGROUP", 0) != 0)
    return failure(what, shown(text(reply.get()), 200));
  return ok();
}

Result<std::vector<StreamEntry>> RedisClient::xreadgroup(std::string_view group, std::string_view consumer, std::string_view stream,
                                                         int64_t count, int64_t block_ms, std::string_view id) {
  const std::string what = "XREADGROUP " + shown(stream) + " " + shown(group);
  if (count < 1 || block_ms < 0)
    return fail(ErrorCode::kUsage, uri_.redacted() + ": " + what + ": count must be at least 1 and block_ms at least 0");
  const std::string count_text = std::to_string(count), block_text = std::to_string(block_ms);
  std::vector<std::string_view> args = {"XREADGROUP", "GROUP", group, consumer, "COUNT", count_text};
  if (block_ms > 0) args.insert(args.end(), {"BLOCK", block_text});
  args.insert(args.end(), {"STREAMS", stream, id});
  // Redis times out blocked clients in its cron (every 100 ms at the default hz 10, every second
  // at hz 1): an empty reply comes up to that long after block_ms.
  const std::chrono::milliseconds block(block_ms);
  SD_ASSIGN_OR_RETURN(RedisReply reply, run(args, what, block_ms > 0 ? timeout_ + block + kBlockSlack : timeout_));
  std::vector<StreamEntry> entries;
  if (reply->type == REDIS_REPLY_NIL) return entries;  // BLOCK ran out
  bool good = reply->type == REDIS_REPLY_ARRAY;
  // [[stream, [entry, ...]], ...]: one stream asked for.
  for (size_t i = 0; good && i < reply->elements; ++i) {
    const redisReply* s = reply->element[i];
    good = s->type == REDIS_REPLY_ARRAY && s->elements == 2 && parse_entries(s->element[1], entries);
  }
  if (!good) return failure(what, "unexpected reply shape");
  return entries;
}

Result<int64_t> RedisClient::xack(std::string_view stream, std::string_view group, const std::vector<std::string>& ids) {
  if (ids.empty()) return 0;
  const std::string what = "XACK " + shown(stream) + " " + shown(group);
  std::vector<std::string_view> args = {"XACK", stream, group};
  args.insert(args.end(), ids.begin(), ids.end());
  SD_ASSIGN_OR_RETURN(RedisReply reply, run(args, what, timeout_));
  if (reply->type != REDIS_REPLY_INTEGER) return failure(what, std::string("unexpected ") + type_name(reply.get()) + " reply");
  return reply->integer;
}

Result<AutoClaimed> RedisClient::xautoclaim(std::string_view stream, std::string_view group, std::string_view consumer,
                                            int64_t min_idle_ms, std::string_view start_id, int64_t count) {
  const std::string what = "XAUTOCLAIM " + shown(stream) + " " + shown(group);
  if (count < 1 || min_idle_ms < 0)
    return fail(ErrorCode::kUsage, uri_.redacted() + ": " + what + ": count must be at least 1 and min_idle_ms at least 0");
  const std::string idle_text = std::to_string(min_idle_ms), count_text = std::to_string(count);
  SD_ASSIGN_OR_RETURN(RedisReply reply,
                      run({"XAUTOCLAIM", stream, group, consumer, idle_text, start_id, "COUNT", count_text}, what, timeout_));
  // [next start id, [entry, ...]] and, from Redis 7, [deleted id, ...].
  AutoClaimed out;
  bool good = reply->type == REDIS_REPLY_ARRAY && (reply->elements == 2 || reply->elements == 3) && is_string(reply->element[0]) &&
              parse_entries(reply->element[1], out.entries);
  if (good && reply->elements == 3) {
    const redisReply* deleted = reply->element[2];
    good = deleted->type == REDIS_REPLY_ARRAY;
    for (size_t i = 0; good && i < deleted->elements; ++i) {
      good = is_string(deleted->element[i]);
      if (good) out.deleted_ids.push_back(text(deleted->element[i]));
    }
  }
  if (!good) return failure(what, "unexpected reply shape");
  out.next_start_id = text(reply->element[0]);
  return out;
}

Result<int64_t> RedisClient::xpending_count(std::string_view stream, std::string_view group) {
  const std::string what = "XPENDING " + shown(stream) + " " + shown(group);
  SD_ASSIGN_OR_RETURN(RedisReply reply, run({"XPENDING", stream, group}, what, timeout_));
  // [count, smallest id, largest id, [[consumer, count], ...]]
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 || reply->element[0]->type != REDIS_REPLY_INTEGER)
    return failure(what, "unexpected reply shape");
  return reply->element[0]->integer;
}

Result<int64_t> RedisClient::xpending_count_of(std::string_view stream, std::string_view group, std::string_view consumer) {
  const std::string what = "XPENDING " + shown(stream) + " " + shown(group);
  SD_ASSIGN_OR_RETURN(RedisReply reply, run({"XPENDING", stream, group}, what, timeout_));
  // [count, smallest id, largest id, [[consumer, count as a string], ...]]; nil instead of the list when none is pending
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 4) return failure(what, "unexpected reply shape");
  const redisReply* consumers = reply->element[3];
  if (consumers->type != REDIS_REPLY_ARRAY) return int64_t{0};
  for (size_t i = 0; i < consumers->elements; ++i) {
    const redisReply* pair = consumers->element[i];
    if (pair->type != REDIS_REPLY_ARRAY || pair->elements < 2 || pair->element[0]->type != REDIS_REPLY_STRING ||
        pair->element[1]->type != REDIS_REPLY_STRING)
      return failure(what, "unexpected reply shape");
    if (std::string_view(pair->element[0]->str, pair->element[0]->len) != consumer) continue;
    return static_cast<int64_t>(std::strtoll(pair->element[1]->str, nullptr, 10));
  }
  return int64_t{0};
}

Result<int64_t> RedisClient::xlen(std::string_view stream) {
  const std::string what = "XLEN " + shown(stream);
  SD_ASSIGN_OR_RETURN(RedisReply reply, run({"XLEN", stream}, what, timeout_));
  if (reply->type != REDIS_REPLY_INTEGER) return failure(what, std::string("unexpected ") + type_name(reply.get()) + " reply");
  return reply->integer;
}

}  // namespace sd::transport
