// The transport's cost per frame, isolated (issue 15's target: at most 2 ms of one core per
// 1280x720 JPEG at quality 90 into a 640-wide model input, for decode + parse + read + write +
// acknowledge; the seeds' loop spent about 6 ms): a real redis-server (started here on a free
// loopback port) holds the frames; each iteration is one frame through the worker's side of the
// wire as the Redis source and sink do it: XREADGROUP (8 entries at a time, as the source reads),
// parse, JPEG decode at full size (arg 0) or at the DCT scale a 640 input needs (arg 640), the
// Detections message (10 boxes) encoded and XADDed, XACK (8 at a time, as the source batches).
// CPU time is this process's; the Redis server runs on its own core and is not counted.
#include <benchmark/benchmark.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <thread>


#include "bench_frames.h"
#include "sinks/redis_sink.h"
#include "transport/frame_codec.h"
#include "transport/redis_client.h"
#include "transport/redis_uri.h"

extern char** environ;

namespace sd {
namespace {

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A throwaway redis-server for the benchmark's lifetime.
struct BenchRedis {
  pid_t pid = -1;
  int port = 0;
  BenchRedis() {
    port = free_port();
    const std::string p = std::to_string(port);
    const char* argv[] = {"redis-server", "--port", p.c_str(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                          "--dir", "/tmp", "--logfile", "", "--daemonize", "no", nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    if (posix_spawnp(&pid, "redis-server", &actions, nullptr, const_cast<char**>(argv), environ) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~BenchRedis() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  std::optional<transport::RedisClient> connect() const {
    auto uri = transport::parse_redis_uri("redis://127.0.0.1:" + std::to_string(port) + "/frames", std::nullopt);
    for (int i = 0; i < 500 && pid > 0; ++i) {
      auto c = transport::RedisClient::connect(*uri, std::chrono::milliseconds(2000));
      if (c) return std::move(*c);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::nullopt;
  }
};

// arg: the model input width (0: decode at full size).
void BM_RedisTransportPerFrame720p(benchmark::State& state) {
  BenchRedis server;
  auto client = server.connect();
  if (!client) {
    state.SkipWithError("no redis-server could be started");
    return;
  }
  const int64_t frames = state.max_iterations;
  const std::string& msg = bench::jpeg_frame_message_720p();
  for (int64_t i = 0; i < frames; ++i) client->xadd("frames", 0, {{"frame", msg}});
  if (!client->xgroup_create("frames", "bench", "0")) state.SkipWithError("XGROUP CREATE failed");
  const int min_w = static_cast<int>(state.range(0));
  transport::JpegDecoder dec;
  FrameResult result;
  for (int k = 0; k < 10; ++k) result.detections.push_back({100.f + k, 50.f, 200.f + k, 150.f, 0.9f, k % 3});
  const std::vector<std::string> names = {"person", "car", "dog"};
  std::vector<transport::StreamEntry> batch;
  std::vector<std::string> acks;
  size_t next = 0;
  for (auto _ : state) {
    if (next == batch.size()) {
      if (!acks.empty()) client->xack("frames", "bench", acks);
      acks.clear();
      auto got = client->xreadgroup("bench", "b", "frames", 8, 0, ">");
      if (!got || got->empty()) {
        state.SkipWithError("the stream ran dry");
        break;
      }
      batch = std::move(*got);
      next = 0;
    }
    const transport::StreamEntry& e = batch[next++];
    auto parsed = transport::parse_frame_message(e.fields[0].second, 1ull << 26);
    if (!dec.decode(parsed.header.data, {1280, 720}, min_w, 0, result.frame.image)) state.SkipWithError("decode failed");
    result.frame.original_size = {1280, 720};
    const std::string det = encode_detections_message(result, "cam", "model.onnx", names);
    client->xadd("dets", 10000, {{"detections", det}});
    acks.push_back(e.id);
  }
  state.counters["jpeg_kB"] = static_cast<double>(msg.size()) / 1e3;
  state.counters["decoded_width"] = result.frame.image.cols;
}
BENCHMARK(BM_RedisTransportPerFrame720p)->Arg(0)->Arg(640)->Iterations(2000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sd
