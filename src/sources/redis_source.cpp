#include "sources/redis_source.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "core/log.h"
#include "core/unacknowledged_entries.h"
#include "transport/frame_codec.h"
#include "transport/redis_client.h"
#include "transport/redis_reconnect.h"
#include "runtime/source_health.h"
#include "transport/redis_uri.h"

namespace sd {

using transport::BadFrame;
using transport::RedisClient;
using transport::StreamEntry;

// Any case, and rediss:// too, so that the parser says what it thinks of them (TLS: unsupported).
bool is_redis_spec(const std::string& spec) {
  std::string scheme = spec.substr(0, std::min<size_t>(spec.size(), 9));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  return scheme.rfind("redis://", 0) == 0 || scheme.rfind("rediss://", 0) == 0;
}

namespace {

constexpr const char* kFrameField = "frame";
constexpr int kBadFrameKinds = 6;

std::string default_consumer_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "host");
  return std::string(host) + "-" + std::to_string(::getpid());
}

struct RedisSourceConfig {
  transport::RedisUri uri;
  std::string group, consumer, dead_stream;
  int64_t claim_after_ms = 30000, count = 8, block_ms = 100, reconnect_for_ms = 60000, dead_maxlen = 10000;
  bool drain = false;
  uint64_t max_pixels = 0;
  double max_age_ms = 0;
};

class RedisSource final : public Source {
 public:
  RedisSource(RedisSourceConfig config, RedisClient client, RedisClient keeper_client, std::function<bool()> should_stop,
              SourceHealth* health)
      : config_(std::move(config)), client_(std::move(client)), keeper_client_(std::move(keeper_client)),
        should_stop_(std::move(should_stop)), health_(health) {
    info_.uri = config_.uri.redacted();
    info_.kind = SourceKind::kRedis;
    // Not live for the queue policy: entries wait in Redis (for this worker or another), so the
    // pipeline blocks on a full queue instead of dropping; --max-age keeps the work fresh.
    info_.live = false;
    track_unacknowledged_entries();
    keeper_ = std::thread([this] { keep_held_entries(); });
  }
  ~RedisSource() override { stop_keeper(); }

  const SourceInfo& info() const override { return info_; }

  Result<bool> read(Frame& frame) override {
    idle_ms_ = 0;
    while (true) {
      // On a stop request the entries fetched already are still handed out (has_read_ahead), to
      // be finished and acknowledged; nothing more is fetched.
      const bool stopping = should_stop_ && should_stop_();
      if (!buffer_.empty()) {
        StreamEntry entry = std::move(buffer_.front());
        buffer_.pop_front();
        SD_ASSIGN_OR_RETURN(bool taken, take(entry, frame));
        if (taken) return true;
        continue;
      }
      if (stopping) return false;
      SD_TRY(flush_acks());
      SD_ASSIGN_OR_RETURN(bool more, fetch());
      if (!more) return false;
    }
  }

  void settle(const Frame& frame, FrameOutcome outcome) override {
    std::lock_guard<std::mutex> lock(mutex_);
    // Done with: held until its XACK is sent (so that a re-read of our pending entries after a
    // reconnect cannot take it for undone); not done: let go, to be delivered again.
    if (frame_outcome_is_final(outcome)) to_ack_.push_back(frame.origin);
    else held_.erase(frame.origin);
  }

  Status close() override {
    stop_keeper();
    Status st = flush_acks();
    // What is still pending on this consumer, as Redis counts it (entries this worker read and
    // did not finish, and any of its own from an earlier run it did not get to); what it knows of
    // itself when Redis cannot be asked.
    auto pending = client_.xpending_count_of(config_.uri.stream, config_.group, config_.consumer);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      left_pending_ = pending ? *pending : static_cast<int64_t>(unacked_.size());
    }
    int64_t bad = 0;
    for (int64_t n : bad_counts_) bad += n;
    if (bad > 0 || too_old_ > 0 || claimed_ > 0 || trimmed_ > 0)
      log_info("%s: %lld entries moved to %s, %lld too old for --max-age, %lld claimed from other consumers, %lld trimmed "
               "before they were processed", info_.uri.c_str(), static_cast<long long>(bad), config_.dead_stream.c_str(),
               static_cast<long long>(too_old_), static_cast<long long>(claimed_), static_cast<long long>(trimmed_));
    return st;
  }

  bool has_read_ahead() const override { return !buffer_.empty(); }
  std::optional<int64_t> left_pending() const override { return left_pending_; }
  void prefer_size(cv::Size network_input) override { decode_min_ = network_input; }
  int64_t dropped_too_old() const override { return too_old_; }
  double last_read_idle_ms() const override { return idle_ms_; }

 private:
  // A command's failure: a lost connection is reconnected (and the command's work redone by the
  // caller's next round); an error reply fails the run.
  Status recover(const Error& e) {
    if (!client_.connection_lost()) return tl::unexpected(e);
    // Down until connected again: the health board (/health, /metrics, the profile) says so.
    if (health_) health_->outage(SourceState::kBackoff, e.message);
    SD_TRY(transport::reconnect_with_backoff(client_, std::chrono::milliseconds(config_.reconnect_for_ms), should_stop_));
    // A server restarted without persistence has lost the group (and the stream): made again.
    SD_TRY(client_.xgroup_create(config_.uri.stream, config_.group, "0"));
    if (health_) health_->recovered();
    // What was delivered to us before is still ours: read it again, minus what is in flight.
    own_pending_done_ = false;
    own_pending_cursor_ = "0";
    return ok();
  }

  Status flush_acks() {
    std::vector<std::string> ids;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ids.swap(to_ack_);
    }
    if (ids.empty()) return ok();
    while (true) {
      auto r = client_.xack(config_.uri.stream, config_.group, ids);
      if (r) break;
      SD_TRY(recover(r.error()));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& id : ids) {
      held_.erase(id);
      if (unacked_.erase(id) > 0) add_unacknowledged_entries(-1);
    }
    return ok();
  }

  // Fills buffer_: this consumer's own pending entries first (delivered before a restart or a
  // reconnect), then entries idle too long on other consumers, then new ones. false: drained.
  Result<bool> fetch() {
    const auto now = std::chrono::steady_clock::now();
    Result<std::vector<StreamEntry>> got = std::vector<StreamEntry>{};
    if (!own_pending_done_) {
      got = client_.xreadgroup(config_.group, config_.consumer, config_.uri.stream, config_.count, 0, own_pending_cursor_);
      if (got) {
        if (got->empty()) own_pending_done_ = true;
        else own_pending_cursor_ = got->back().id;
      }
    } else if (now >= next_claim_) {
      auto claimed = client_.xautoclaim(config_.uri.stream, config_.group, config_.consumer, config_.claim_after_ms,
                                        claim_cursor_, config_.count);
      if (claimed) {
        claim_cursor_ = claimed->next_start_id;
        // A whole pass over the pending list: the next one when entries may have grown idle again.
        if (claim_cursor_ == "0-0")
          next_claim_ = now + std::chrono::milliseconds(std::max<int64_t>(1, std::min<int64_t>(config_.claim_after_ms / 2, 1000)));
        for (auto& e : claimed->entries)
          if (!is_held(e.id)) ++claimed_;
        if (!claimed->deleted_ids.empty()) {
          if (trimmed_ == 0)
            log_warn("%s: pending entries were trimmed from the stream before anyone processed them (their frames are lost: "
                     "raise the producer's MAXLEN, or add workers)", info_.uri.c_str());
          trimmed_ += static_cast<int64_t>(claimed->deleted_ids.size());
        }
        got = std::move(claimed->entries);
      } else {
        got = tl::unexpected(claimed.error());
      }
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      got = client_.xreadgroup(config_.group, config_.consumer, config_.uri.stream, config_.count, config_.block_ms, ">");
      // Waiting for entries to arrive, mostly (when some are there already, the call is short).
      idle_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (got && got->empty() && config_.drain) {
        SD_ASSIGN_OR_RETURN(bool drained, is_drained());
        if (drained) return false;
      }
    }
    if (!got) {
      SD_TRY(recover(got.error()));
      return true;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& e : *got) {
      if (unacked_.insert(e.id).second) add_unacknowledged_entries(1);
      if (held_.insert(e.id).second) buffer_.push_back(std::move(e));
    }
    return true;
  }

  // Nothing undelivered came, nothing of ours is in flight or unacknowledged, and the group has
  // nothing pending anywhere (a dead worker's entries are claimed first).
  Result<bool> is_drained() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!held_.empty() || !to_ack_.empty()) return false;
    }
    auto pending = client_.xpending_count(config_.uri.stream, config_.group);
    if (!pending) {
      SD_TRY(recover(pending.error()));
      return false;
    }
    return *pending == 0;
  }

  bool is_held(const std::string& id) {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_.count(id) > 0;
  }

  // The keeper: while this worker lives, the entries it holds (buffered, in the pipeline) have
  // their idle time reset every claim-after/3 (XCLAIM ... JUSTID to this same consumer), so that
  // other workers claim only a dead worker's entries, never those of a live but busy one. Its own
  // connection: the reader thread may wait on the pipeline for long.
  void keep_held_entries() {
    const auto interval = std::chrono::milliseconds(std::max<int64_t>(10, config_.claim_after_ms / 3));
    std::unique_lock<std::mutex> lock(keeper_mutex_);
    while (!keeper_cv_.wait_for(lock, interval, [&] { return keeper_stop_; })) {
      std::vector<std::string> ids;
      {
        std::lock_guard<std::mutex> held_lock(mutex_);
        ids.assign(held_.begin(), held_.end());
      }
      if (ids.empty()) continue;
      lock.unlock();
      refresh(ids);
      lock.lock();
    }
  }

  void refresh(const std::vector<std::string>& ids) {
    if (keeper_client_.connection_lost() && !keeper_client_.reconnect()) return;  // tried again next round
    constexpr size_t kChunk = 512;
    for (size_t i = 0; i < ids.size(); i += kChunk) {
      std::vector<std::string_view> args = {"XCLAIM", config_.uri.stream, config_.group, config_.consumer, "0"};
      for (size_t k = i; k < std::min(ids.size(), i + kChunk); ++k) args.emplace_back(ids[k]);
      args.emplace_back("JUSTID");
      if (!keeper_client_.command(args)) return;  // a failed refresh only risks a duplicate
    }
  }

  void stop_keeper() {
    {
      std::lock_guard<std::mutex> lock(keeper_mutex_);
      keeper_stop_ = true;
    }
    keeper_cv_.notify_all();
    if (keeper_.joinable()) keeper_.join();
  }

  // Turns an entry into a frame; false when it was refused (dead-lettered) or too old (both
  // acknowledged with the next batch).
  Result<bool> take(const StreamEntry& entry, Frame& frame) {
    const std::string* payload = nullptr;
    for (const auto& [k, v] : entry.fields)
      if (k == kFrameField) payload = &v;
    if (!payload) {
      SD_TRY(refuse(entry, BadFrame::kMissingField,
                    entry.fields.empty() ? "the entry was deleted from the stream" : "the entry has no 'frame' field", nullptr));
      return false;
    }
    transport::ParsedFrame parsed = transport::parse_frame_message(*payload, config_.max_pixels);
    if (parsed.bad != BadFrame::kNone) {
      SD_TRY(refuse(entry, parsed.bad, parsed.why, payload));
      return false;
    }
    const transport::FrameHeader& h = parsed.header;
    const int64_t now_us = wall_now_us();
    if (config_.max_age_ms > 0 && h.capture_time_us > 0 &&
        static_cast<double>(now_us - h.capture_time_us) > config_.max_age_ms * 1000) {
      ++too_old_;
      std::lock_guard<std::mutex> lock(mutex_);
      to_ack_.push_back(entry.id);
      return false;
    }
    if (h.jpeg) {
      Status st = jpeg_.decode(h.data, {h.width, h.height}, decode_min_.width, decode_min_.height, frame.image);
      if (!st) {
        SD_TRY(refuse(entry, BadFrame::kCorruptImage, st.error().message, payload));
        return false;
      }
    } else {
      frame.image.create(h.height, h.width, CV_8UC3);
      std::memcpy(frame.image.data, h.data.data(), h.data.size());
    }
    frame.set_bgr();
    frame.index = h.frame_index;
    frame.origin = entry.id;
    frame.source_name = h.source_id;
    frame.capture_wall_us = h.capture_time_us;
    frame.original_size = cv::Size(h.width, h.height);
    if (first_capture_us_ == 0) first_capture_us_ = h.capture_time_us;
    frame.timestamp_ms = static_cast<double>(h.capture_time_us - first_capture_us_) / 1000.0;
    // The pipeline's clock: the capture as seen from here, so latency includes the transport.
    const auto age = std::chrono::microseconds(h.capture_time_us > 0 ? std::max<int64_t>(0, now_us - h.capture_time_us) : 0);
    frame.capture_time = Clock::now() - age;
    if (info_.width == 0) {
      info_.width = h.width;
      info_.height = h.height;
    }
    return true;
  }

  // Moves a bad entry to the dead-letter stream with the reason, and acknowledges it. When the
  // dead-letter stream refuses it (a wrong type, no memory, no permission), the run fails: the
  // entry stays pending, for a worker that can keep it.
  Status refuse(const StreamEntry& entry, BadFrame kind, const std::string& why, const std::string* payload) {
    std::vector<std::pair<std::string_view, std::string_view>> fields = {
        {"reason", transport::bad_frame_name(kind)}, {"why", why}, {"entry", entry.id},
        {"stream", config_.uri.stream}, {"group", config_.group}, {"consumer", config_.consumer}};
    if (payload) fields.emplace_back(kFrameField, *payload);
    while (true) {
      auto r = client_.xadd(config_.dead_stream, config_.dead_maxlen, fields);
      if (r) break;
      if (!client_.connection_lost())
        return fail(ErrorCode::kSource, info_.uri + ": entry " + entry.id + " (" + transport::bad_frame_name(kind) +
                                            ") could not be moved to the dead-letter stream " + config_.dead_stream + ": " +
                                            r.error().message);
      SD_TRY(recover(r.error()));
    }
    auto& count = bad_counts_[static_cast<size_t>(kind) % kBadFrameKinds];
    if (count++ == 0)
      log_warn("%s: entry %s refused (%s: %s); moved to %s (logged once per kind)", info_.uri.c_str(), entry.id.c_str(),
               transport::bad_frame_name(kind), why.c_str(), config_.dead_stream.c_str());
    std::lock_guard<std::mutex> lock(mutex_);
    to_ack_.push_back(entry.id);
    return ok();
  }

  RedisSourceConfig config_;
  RedisClient client_;  // used by the reader thread only (read, close)
  RedisClient keeper_client_;  // the keeper thread's
  std::thread keeper_;
  std::mutex keeper_mutex_;
  std::condition_variable keeper_cv_;
  bool keeper_stop_ = false;
  std::function<bool()> should_stop_;
  SourceHealth* health_;  // the run's slot for this source (may be null)
  SourceInfo info_;
  transport::JpegDecoder jpeg_;
  cv::Size decode_min_;
  std::deque<StreamEntry> buffer_;
  bool own_pending_done_ = false;
  std::string own_pending_cursor_ = "0";
  std::string claim_cursor_ = "0-0";
  std::chrono::steady_clock::time_point next_claim_{};
  int64_t first_capture_us_ = 0;
  int64_t too_old_ = 0, claimed_ = 0, trimmed_ = 0;
  double idle_ms_ = 0;  // of the current read(): waiting on an empty stream
  std::array<int64_t, kBadFrameKinds> bad_counts_{};
  // Shared with settle(), which any pipeline thread may call.
  std::mutex mutex_;
  std::unordered_set<std::string> held_;  // read from Redis, and neither acknowledged nor given up
  std::unordered_set<std::string> unacked_;  // read from Redis and not acknowledged: pending on this consumer
  std::vector<std::string> to_ack_;
  std::optional<int64_t> left_pending_;  // set by close()
};

}  // namespace

Result<std::unique_ptr<Source>> open_redis_source(const std::string& spec, const SourceOptions& options) {
  SD_ASSIGN_OR_RETURN(transport::RedisUri uri, transport::parse_redis_uri(spec, options.redis_password));
  SD_TRY(transport::check_query_keys(
      uri, {"group", "consumer", "claim-after", "count", "block", "drain", "max-pixels", "dead", "dead-maxlen", "reconnect-for"}));
  RedisSourceConfig c;
  c.group = transport::query_str(uri, "group", "streamdet");
  c.consumer = transport::query_str(uri, "consumer", default_consumer_name());
  c.dead_stream = transport::query_str(uri, "dead", uri.stream + ":dead");
  SD_ASSIGN_OR_RETURN(c.claim_after_ms, transport::query_int(uri, "claim-after", options.claim_after_ms, 1, int64_t{1} << 40));
  SD_ASSIGN_OR_RETURN(c.count, transport::query_int(uri, "count", 8, 1, 10000));
  SD_ASSIGN_OR_RETURN(c.block_ms, transport::query_int(uri, "block", 100, 1, 60000));
  SD_ASSIGN_OR_RETURN(int64_t drain, transport::query_int(uri, "drain", 0, 0, 1));
  SD_ASSIGN_OR_RETURN(int64_t max_pixels, transport::query_int(uri, "max-pixels", static_cast<int64_t>(options.max_pixels), 1,
                                                                int64_t{1} << 40));
  SD_ASSIGN_OR_RETURN(c.dead_maxlen, transport::query_int(uri, "dead-maxlen", 10000, 0, int64_t{1} << 40));
  SD_ASSIGN_OR_RETURN(c.reconnect_for_ms, transport::query_int(uri, "reconnect-for", 60000, 0, int64_t{1} << 40));
  c.drain = drain == 1;
  c.max_pixels = static_cast<uint64_t>(max_pixels);
  c.max_age_ms = options.max_age_ms;
  c.uri = std::move(uri);
  SD_ASSIGN_OR_RETURN(RedisClient client, RedisClient::connect(c.uri, std::chrono::milliseconds(2000)));
  SD_TRY(client.xgroup_create(c.uri.stream, c.group, "0"));
  SD_ASSIGN_OR_RETURN(RedisClient keeper, RedisClient::connect(c.uri, std::chrono::milliseconds(2000)));
  return std::unique_ptr<Source>(
      std::make_unique<RedisSource>(std::move(c), std::move(client), std::move(keeper), options.should_stop, options.health));
}

}  // namespace sd
