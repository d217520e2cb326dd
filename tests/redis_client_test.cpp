// The Redis client (transport/redis_client.h) against a real redis-server (tests/redis_server.h):
// entries go in and come out byte for byte, a consumer group hands out, acknowledges and
// reassigns entries as at-least-once delivery needs, a wrong password is refused without being
// shown, and a server that goes away is reported as a lost connection that reconnect() recovers,
// with the entries still there when the server persists them. Skipped where redis-server is not
// installed.
#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "redis_server.h"
#include "transport/backoff.h"
#include "transport/redis_client.h"

namespace sd::transport {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;
using test::RedisServerOptions;

#define SKIP_WITHOUT_REDIS()                                                                                    \
  if (!test::redis_server_available())                                                                          \
  GTEST_SKIP() << test::kRedisServerPath << " is not installed (apt-get install redis-server, or scripts/install-deps.sh)"

#define ASSERT_OK(r) ASSERT_TRUE(r) << (r).error().message

Result<RedisClient> connect_to(const std::string& uri_text, std::optional<std::string> default_password = std::nullopt,
                               std::chrono::milliseconds timeout = 5000ms) {
  SD_ASSIGN_OR_RETURN(RedisUri uri, parse_redis_uri(uri_text, std::move(default_password)));
  return RedisClient::connect(uri, timeout);
}

std::vector<std::string> ids_of(const std::vector<StreamEntry>& entries) {
  std::vector<std::string> ids;
  for (const StreamEntry& e : entries) ids.push_back(e.id);
  return ids;
}

class RedisClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_REDIS();
    ASSERT_TRUE(server_.start());
    auto client = connect_to(server_.uri("frames"));
    ASSERT_OK(client);
    client_.emplace(std::move(*client));
  }

  RedisServer server_;
  std::optional<RedisClient> client_;
};

TEST_F(RedisClientTest, BinaryEntriesComeBackByteForByte) {
  RedisClient& c = *client_;
  ASSERT_OK(c.xgroup_create("frames", "detectors", "$"));
  std::string all_bytes;
  for (int i = 0; i < 256; ++i) all_bytes += static_cast<char>(i);
  const std::string frame = std::string("\0\xff\0jpeg\r\n", 9) + all_bytes + std::string(100000, '\0');
  const std::string field(std::string("f\0\xff", 3));
  auto id = c.xadd("frames", 0, {{"frame", frame}, {field, ""}});
  ASSERT_OK(id);

  auto entries = c.xreadgroup("detectors", "worker-1", "frames", 10, 0, ">");
  ASSERT_OK(entries);
  ASSERT_EQ(entries->size(), 1u);
  const StreamEntry& e = entries->front();
  EXPECT_EQ(e.id, *id);
  ASSERT_EQ(e.fields.size(), 2u);
  EXPECT_EQ(e.fields[0].first, "frame");
  EXPECT_TRUE(e.fields[0].second == frame) << "the frame's bytes changed";
  EXPECT_EQ(e.fields[1].first, field);
  EXPECT_EQ(e.fields[1].second, "");

  auto len = c.xlen("frames");
  ASSERT_OK(len);
  EXPECT_EQ(*len, 1);
  // Nothing new: an empty list, at once without BLOCK.
  auto none = c.xreadgroup("detectors", "worker-1", "frames", 10, 0, ">");
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(RedisClientTest, CreatingAGroupTwiceIsFineAndMakesTheStream) {
  RedisClient& c = *client_;
  ASSERT_OK(c.xgroup_create("new-stream", "g", "$"));
  ASSERT_OK(c.xgroup_create("new-stream", "g", "$"));
  ASSERT_OK(c.xgroup_create("new-stream", "g", "0"));
  auto len = c.xlen("new-stream");
  ASSERT_OK(len);
  EXPECT_EQ(*len, 0);
  // "0" delivers what was there before the group; "$" only what comes after.
  ASSERT_OK(c.xadd("old", 0, {{"k", "v"}}));
  ASSERT_OK(c.xgroup_create("old", "from-start", "0"));
  ASSERT_OK(c.xgroup_create("old", "from-now", "$"));
  auto a = c.xreadgroup("from-start", "w", "old", 10, 0, ">");
  auto b = c.xreadgroup("from-now", "w", "old", 10, 0, ">");
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_EQ(a->size(), 1u);
  EXPECT_EQ(b->size(), 0u);
}

TEST_F(RedisClientTest, AnErrorReplyIsAnErrorAndTheConnectionStaysUsable) {
  RedisClient& c = *client_;
  auto read = c.xreadgroup("no-such-group", "w", "frames", 1, 0, ">");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, ErrorCode::kSource);
  EXPECT_NE(read.error().message.find("XREADGROUP frames no-such-group: NOGROUP"), std::string::npos) << read.error().message;
  EXPECT_NE(read.error().message.find(server_.uri("frames").substr(8)), std::string::npos) << read.error().message;
  EXPECT_FALSE(c.connection_lost());
  ASSERT_OK(c.command({"SET", "plain", "x"}));
  auto wrong_type = c.xlen("plain");
  ASSERT_FALSE(wrong_type);
  EXPECT_NE(wrong_type.error().message.find("WRONGTYPE"), std::string::npos) << wrong_type.error().message;
  // Redis quotes the arguments of an unknown command; the message stays one line.
  auto unknown = c.command({"NOSUCHCOMMAND", std::string_view("a\nb\0c", 5)});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("NOSUCHCOMMAND: ERR unknown command"), std::string::npos) << unknown.error().message;
  EXPECT_EQ(unknown.error().message.find('\n'), std::string::npos) << unknown.error().message;
  EXPECT_FALSE(c.connection_lost());
  auto pong = c.command({"PING"});
  ASSERT_OK(pong);
  EXPECT_EQ(std::string((*pong)->str, (*pong)->len), "PONG");
}

TEST_F(RedisClientTest, XaddTrimsApproximately) {
  RedisClient& c = *client_;
  for (int i = 0; i < 1000; ++i) ASSERT_OK(c.xadd("trimmed", 10, {{"i", std::to_string(i)}}));
  auto len = c.xlen("trimmed");
  ASSERT_OK(len);
  // MAXLEN ~ drops whole radix-tree nodes (100 entries by default): at least 10 stay.
  EXPECT_GE(*len, 10);
  EXPECT_LT(*len, 1000);
}

TEST_F(RedisClientTest, AckedEntriesLeaveThePendingList) {
  RedisClient& c = *client_;
  ASSERT_OK(c.xgroup_create("frames", "g", "$"));
  for (int i = 0; i < 3; ++i) ASSERT_OK(c.xadd("frames", 0, {{"i", std::to_string(i)}}));
  auto entries = c.xreadgroup("g", "w", "frames", 10, 0, ">");
  ASSERT_OK(entries);
  ASSERT_EQ(entries->size(), 3u);
  auto pending = c.xpending_count("frames", "g");
  ASSERT_OK(pending);
  EXPECT_EQ(*pending, 3);

  auto acked = c.xack("frames", "g", {entries->at(0).id, entries->at(2).id});
  ASSERT_OK(acked);
  EXPECT_EQ(*acked, 2);
  pending = c.xpending_count("frames", "g");
  ASSERT_OK(pending);
  EXPECT_EQ(*pending, 1);
  // Acknowledging again changes nothing (a redelivered entry may be acknowledged twice).
  acked = c.xack("frames", "g", {entries->at(0).id});
  ASSERT_OK(acked);
  EXPECT_EQ(*acked, 0);
  acked = c.xack("frames", "g", {});
  ASSERT_OK(acked);
  EXPECT_EQ(*acked, 0);

  // What is still pending comes back with id "0", the one that was left.
  auto again = c.xreadgroup("g", "w", "frames", 10, 0, "0");
  ASSERT_OK(again);
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ(again->front().id, entries->at(1).id);
  ASSERT_EQ(again->front().fields.size(), 1u);
  EXPECT_EQ(again->front().fields[0].second, "1");
}

TEST_F(RedisClientTest, APendingEntryDeletedSinceComesBackWithNoFields) {
  RedisClient& c = *client_;
  ASSERT_OK(c.xgroup_create("frames", "g", "$"));
  ASSERT_OK(c.xadd("frames", 0, {{"i", "0"}}));
  ASSERT_OK(c.xadd("frames", 0, {{"i", "1"}}));
  auto entries = c.xreadgroup("g", "w", "frames", 10, 0, ">");
  ASSERT_OK(entries);
  ASSERT_EQ(entries->size(), 2u);
  ASSERT_OK(c.command({"XDEL", "frames", entries->at(0).id}));

  auto pending = c.xreadgroup("g", "w", "frames", 10, 0, "0");
  ASSERT_OK(pending);
  ASSERT_EQ(pending->size(), 2u);
  EXPECT_EQ(pending->at(0).id, entries->at(0).id);
  EXPECT_TRUE(pending->at(0).fields.empty());
  EXPECT_EQ(pending->at(1).fields.size(), 1u);
}

TEST_F(RedisClientTest, XautoclaimHandsAnIdleEntryToAnotherConsumer) {
  RedisClient& c = *client_;
  ASSERT_OK(c.xgroup_create("frames", "g", "$"));
  for (int i = 0; i < 3; ++i) ASSERT_OK(c.xadd("frames", 0, {{"i", std::to_string(i)}}));
  auto taken = c.xreadgroup("g", "crashed", "frames", 10, 0, ">");
  ASSERT_OK(taken);
  ASSERT_EQ(taken->size(), 3u);
  // One of them is deleted while pending: Redis 7 drops it from the list and names it.
  ASSERT_OK(c.command({"XDEL", "frames", taken->at(1).id}));

  // min_idle 0: every pending entry is idle enough, whatever the machine's speed.
  auto claimed = c.xautoclaim("frames", "g", "rescuer", 0, "0-0", 10);
  ASSERT_OK(claimed);
  EXPECT_EQ(claimed->next_start_id, "0-0");
  EXPECT_EQ(ids_of(claimed->entries), (std::vector<std::string>{taken->at(0).id, taken->at(2).id}));
  EXPECT_EQ(claimed->entries[1].fields.at(0).second, "2");
  EXPECT_EQ(claimed->deleted_ids, (std::vector<std::string>{taken->at(1).id}));

  auto rescuer = c.xreadgroup("g", "rescuer", "frames", 10, 0, "0");
  auto crashed = c.xreadgroup("g", "crashed", "frames", 10, 0, "0");
  ASSERT_OK(rescuer);
  ASSERT_OK(crashed);
  EXPECT_EQ(rescuer->size(), 2u);
  EXPECT_TRUE(crashed->empty());
  auto pending = c.xpending_count("frames", "g");
  ASSERT_OK(pending);
  EXPECT_EQ(*pending, 2);

  // A long idle time claims nothing that was just delivered.
  auto none = c.xautoclaim("frames", "g", "third", 3600000, "0-0", 10);
  ASSERT_OK(none);
  EXPECT_TRUE(none->entries.empty());
}

TEST_F(RedisClientTest, ABlockingReadMayOutlastTheReplyTimeout) {
  auto short_timeout = connect_to(server_.uri("frames"), std::nullopt, 250ms);
  ASSERT_OK(short_timeout);
  ASSERT_OK(short_timeout->xgroup_create("frames", "g", "$"));
  // BLOCK 500 with a 250 ms reply timeout: the read waits the whole block, then finds nothing.
  auto entries = short_timeout->xreadgroup("g", "w", "frames", 1, 500, ">");
  ASSERT_OK(entries);
  EXPECT_TRUE(entries->empty());
  EXPECT_FALSE(short_timeout->connection_lost());
  ASSERT_OK(short_timeout->xlen("frames"));
}

TEST_F(RedisClientTest, AStoppedServerIsALostConnectionAndReconnectRecovers) {
  RedisClient& c = *client_;
  ASSERT_OK(c.xadd("frames", 0, {{"k", "v"}}));
  ASSERT_TRUE(server_.stop());

  auto len = c.xlen("frames");
  ASSERT_FALSE(len);
  EXPECT_EQ(len.error().code, ErrorCode::kSource);
  EXPECT_NE(len.error().message.find("XLEN frames: connection lost"), std::string::npos) << len.error().message;
  EXPECT_TRUE(c.connection_lost());
  auto again = c.xlen("frames");
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("lost earlier (reconnect first)"), std::string::npos) << again.error().message;

  auto down = c.reconnect();
  ASSERT_FALSE(down);
  EXPECT_NE(down.error().message.find("cannot connect"), std::string::npos) << down.error().message;
  EXPECT_TRUE(c.connection_lost());

  ASSERT_TRUE(server_.restart());
  ASSERT_OK(c.reconnect());
  EXPECT_FALSE(c.connection_lost());
  auto after = c.xlen("frames");
  ASSERT_OK(after);
  EXPECT_EQ(*after, 0);  // this server keeps nothing across a restart
}

// The server dies while a large entry is being sent: the write fails with EPIPE, and SIGPIPE
// (which would end the test process) is not delivered.
TEST_F(RedisClientTest, AServerKilledDuringALargeWriteDoesNotKillTheProcess) {
  RedisClient& c = *client_;
  server_.kill9();
  const std::string big(32 << 20, 'x');
  for (int i = 0; i < 2; ++i) {
    auto id = c.xadd("frames", 0, {{"frame", big}});
    ASSERT_FALSE(id);
    EXPECT_TRUE(c.connection_lost());
  }
}

TEST_F(RedisClientTest, AMovedFromClientIsLost) {
  RedisClient moved = std::move(*client_);
  EXPECT_TRUE(client_->connection_lost());  // NOLINT(bugprone-use-after-move): the documented state
  EXPECT_FALSE(moved.connection_lost());
  ASSERT_OK(moved.xlen("frames"));
  EXPECT_FALSE(client_->xlen("frames"));
}

TEST(RedisClient, APersistentServerKeepsEntriesAndPendingListsAcrossARestart) {
  SKIP_WITHOUT_REDIS();
  RedisServer server(RedisServerOptions{.persistent = true, .requirepass = ""});
  ASSERT_TRUE(server.start());
  auto c = connect_to(server.uri("frames"));
  ASSERT_OK(c);
  ASSERT_OK(c->xgroup_create("frames", "g", "$"));
  for (int i = 0; i < 3; ++i) ASSERT_OK(c->xadd("frames", 0, {{"i", std::to_string(i)}}));
  auto read = c->xreadgroup("g", "w", "frames", 2, 0, ">");
  ASSERT_OK(read);
  ASSERT_EQ(read->size(), 2u);
  ASSERT_OK(c->xack("frames", "g", {read->at(0).id}));

  ASSERT_TRUE(server.restart());
  EXPECT_FALSE(c->xlen("frames"));
  ASSERT_OK(c->reconnect());
  auto len = c->xlen("frames");
  ASSERT_OK(len);
  EXPECT_EQ(*len, 3);
  auto pending = c->xreadgroup("g", "w", "frames", 10, 0, "0");
  ASSERT_OK(pending);
  EXPECT_EQ(ids_of(*pending), std::vector<std::string>{read->at(1).id});
  auto fresh = c->xreadgroup("g", "w", "frames", 10, 0, ">");
  ASSERT_OK(fresh);
  ASSERT_EQ(fresh->size(), 1u);
  EXPECT_EQ(fresh->front().fields.at(0).second, "2");

  // Killed without warning, a server with appendfsync always still has every acknowledged write.
  ASSERT_OK(c->xadd("frames", 0, {{"i", "3"}}));
  server.kill9();
  ASSERT_TRUE(server.restart());
  ASSERT_OK(c->reconnect());
  len = c->xlen("frames");
  ASSERT_OK(len);
  EXPECT_EQ(*len, 4);
}

TEST(RedisClient, AuthWithThePasswordAndRefusalWithoutShowingIt) {
  SKIP_WITHOUT_REDIS();
  RedisServer server(RedisServerOptions{.persistent = false, .requirepass = "right-Pa55"});
  ASSERT_TRUE(server.start());
  const std::string base = "redis://127.0.0.1:" + std::to_string(server.port()) + "/frames";

  auto right = connect_to(server.uri("frames"));
  ASSERT_OK(right);
  ASSERT_OK(right->xadd("frames", 0, {{"k", "v"}}));
  // The password from the environment (the app passes REDISCLI_AUTH).
  auto from_env = connect_to(base, "right-Pa55");
  ASSERT_OK(from_env);

  auto wrong = connect_to("redis://:wrong-Pa55@127.0.0.1:" + std::to_string(server.port()) + "/frames");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, ErrorCode::kSource);
  EXPECT_NE(wrong.error().message.find("AUTH: WRONGPASS"), std::string::npos) << wrong.error().message;
  EXPECT_NE(wrong.error().message.find(":***@127.0.0.1"), std::string::npos) << wrong.error().message;
  EXPECT_EQ(wrong.error().message.find("Pa55"), std::string::npos) << wrong.error().message;

  // Redis quotes an unknown command's arguments in its error: the password is not shown even then.
  auto echoed = right->command({"NOSUCHCOMMAND", "right-Pa55"});
  ASSERT_FALSE(echoed);
  EXPECT_NE(echoed.error().message.find("with args beginning with: '***'"), std::string::npos) << echoed.error().message;
  EXPECT_EQ(echoed.error().message.find("Pa55"), std::string::npos) << echoed.error().message;

  auto none = connect_to(base);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("PING: NOAUTH"), std::string::npos) << none.error().message;

  // An ACL user: AUTH user password.
  ASSERT_OK(right->command({"ACL", "SETUSER", "alice", "on", ">alice-Pa55", "~*", "&*", "+@all"}));
  const std::string host = "@127.0.0.1:" + std::to_string(server.port()) + "/frames";
  auto alice = connect_to("redis://alice:alice-Pa55" + host);
  ASSERT_OK(alice);
  auto len = alice->xlen("frames");
  ASSERT_OK(len);
  EXPECT_EQ(*len, 1);
  auto not_alice = connect_to("redis://alice:right-Pa55" + host);
  ASSERT_FALSE(not_alice);
  EXPECT_NE(not_alice.error().message.find("redis://alice:***@"), std::string::npos) << not_alice.error().message;
  EXPECT_EQ(not_alice.error().message.find("Pa55"), std::string::npos) << not_alice.error().message;
}

TEST(RedisClient, NobodyListeningIsACleanConnectError) {
  // A port that was free a moment ago; nothing listens on it.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  auto c = connect_to("redis://:Sup3rS3cret@127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/frames");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::kSource);
  EXPECT_NE(c.error().message.find("cannot connect: Connection refused"), std::string::npos) << c.error().message;
  EXPECT_EQ(c.error().message.find("Sup3r"), std::string::npos) << c.error().message;
}

TEST(RedisClient, AServerThatNeverRepliesTimesOut) {
  // A listening socket nobody accepts on: the kernel completes the connection, no reply comes.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  auto c = connect_to("redis://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/frames", std::nullopt, 100ms);
  close(fd);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("PING: connection lost: no reply within 100 ms"), std::string::npos) << c.error().message;
}

TEST(Backoff, DoublesUpToTheCapAndStartsOverAfterASuccess) {
  Backoff b;
  std::vector<int64_t> delays;
  for (int i = 0; i < 9; ++i) delays.push_back(b.next().count());
  EXPECT_EQ(delays, (std::vector<int64_t>{50, 100, 200, 400, 800, 1600, 2000, 2000, 2000}));
  EXPECT_EQ(b.failures(), 9);
  b.reset();
  EXPECT_EQ(b.failures(), 0);
  EXPECT_EQ(b.next().count(), 50);
  EXPECT_EQ(b.next().count(), 100);

  Backoff custom(3ms, 10ms);
  EXPECT_EQ(custom.next().count(), 3);
  EXPECT_EQ(custom.next().count(), 6);
  EXPECT_EQ(custom.next().count(), 10);
  EXPECT_EQ(custom.next().count(), 10);
}

}  // namespace
}  // namespace sd::transport
