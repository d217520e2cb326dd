#include "app/publish_command.h"

#include <chrono>
#include <thread>

#include "app/option_checks.h"
#include "core/log.h"
#include "core/uri_redaction.h"
#include "runtime/interrupt.h"
#include "sources/source.h"
#include "transport/frame_codec.h"
#include "transport/redis_client.h"
#include "transport/redis_reconnect.h"
#include "transport/redis_uri.h"

namespace sd {

void add_publish_options(CLI::App& cmd, PublishOptions& o) {
  cmd.add_option("-s,--source", o.source, "what to publish: any source streamdet run takes (video file, camera, RTSP URL, ...)")
      ->required();
  cmd.add_option("--sink", o.sink, "redis://[user:pass@]host:port/STREAM (password also from REDISCLI_AUTH)")->required();
  cmd.add_option("--fps", o.fps, "source: at the source's frame rate (as they come for live sources); max: as fast as possible")
      ->capture_default_str()
      ->check(CLI::IsMember({"source", "max"}));
  cmd.add_option("--jpeg-quality", o.jpeg_quality, "JPEG quality 1..100; 0 sends raw BGR")->capture_default_str()->check(integer_in(0, 100));
  cmd.add_option("--maxlen", o.maxlen, "cap the stream at about this many entries (XADD MAXLEN ~; 0: no cap)")
      ->capture_default_str()
      ->check(integer_in(0, INT64_MAX));
  cmd.add_option("--frames,--max-frames", o.max_frames, "publish at most N frames, then stop (-1: all)")->capture_default_str()->check(integer_in(-1, INT64_MAX));
  cmd.add_option("--source-id", o.source_id, "the source id the frames carry (default: --source as given)");
  cmd.add_flag("-q,--quiet", o.quiet, "no summary line");
}

Status run_publish(const PublishOptions& o) {
  SD_ASSIGN_OR_RETURN(transport::RedisUri uri, transport::parse_redis_uri(o.sink, o.redis_password));
  SD_TRY(transport::check_query_keys(uri, {}));
  SD_ASSIGN_OR_RETURN(auto source, open_source(o.source));
  auto connected = transport::RedisClient::connect(uri, std::chrono::milliseconds(2000));
  if (!connected) return fail(ErrorCode::kOutput, connected.error().message);
  transport::RedisClient client = std::move(*connected);
  // Every frame carries it into Redis (and workers copy it into their detections): not a password.
  const std::string source_id = o.source_id.empty() ? without_password(o.source) : o.source_id;
  const SourceInfo& info = source->info();
  // Paced by the source's own clock for files; live sources deliver at their rate anyway.
  const bool paced = o.fps == "source" && !info.live && info.fps > 0;
  const auto start = std::chrono::steady_clock::now();
  Frame frame;
  cv::Mat scratch;
  int64_t sent = 0, bytes = 0, skipped = 0;
  while (!interrupt_requested() && (o.max_frames < 0 || sent < o.max_frames)) {
    auto got = source->read(frame);
    if (!got) {
      if (got.error().code != ErrorCode::kCorruptFrame) return tl::unexpected(got.error());
      log_warn("%s; skipped", got.error().message.c_str());
      ++skipped;
      continue;
    }
    if (!*got) break;
    if (paced) std::this_thread::sleep_until(start + std::chrono::duration<double>(static_cast<double>(sent) / info.fps));
    SD_ASSIGN_OR_RETURN(std::string message,
                        transport::encode_frame_message(frame.bgr(scratch), source_id, frame.index, wall_now_us(), o.jpeg_quality));
    while (true) {
      auto id = client.xadd(uri.stream, o.maxlen, {{"frame", message}});
      if (id) break;
      if (!client.connection_lost()) return fail(ErrorCode::kOutput, id.error().message);
      auto st = transport::reconnect_with_backoff(client, std::chrono::milliseconds(60000), [] { return interrupt_requested(); });
      if (!st) return fail(st.error().code == ErrorCode::kInterrupted ? ErrorCode::kInterrupted : ErrorCode::kOutput, st.error().message);
    }
    ++sent;
    bytes += static_cast<int64_t>(message.size());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.quiet)
    log_info("published %lld frames (%.1f MB, %.1f frames/s) from %s to %s%s", static_cast<long long>(sent), bytes / 1e6,
             s > 0 ? static_cast<double>(sent) / s : 0.0, without_password(o.source).c_str(), uri.redacted().c_str(),
             skipped ? (", " + std::to_string(skipped) + " undecodable frames skipped").c_str() : "");
  if (interrupt_requested()) return fail(ErrorCode::kInterrupted, "interrupted after " + std::to_string(sent) + " frames");
  // What was sent is in Redis; say what of the source was lost (exit 7, as `run` does).
  if (auto damage = source->damage()) return fail(ErrorCode::kDamagedSource, *damage);
  if (skipped > 0) return fail(ErrorCode::kDamagedSource, without_password(o.source) + ": " + std::to_string(skipped) + " frames could not be decoded");
  return ok();
}

}  // namespace sd
