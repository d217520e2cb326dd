#include "sinks/redis_sink.h"

#include <chrono>
#include <mutex>

#include "sinks/jsonl_sink.h"
#include "sinks/sink_factory.h"
#include "sources/redis_source.h"
#include "transport/messages.pb.h"
#include "transport/redis_client.h"
#include "transport/redis_reconnect.h"
#include "transport/redis_uri.h"

namespace sd {

bool is_redis_sink_target(const std::string& target) { return is_redis_spec(target); }

namespace {

int64_t wall_us_of(const Frame& frame) {
  if (frame.capture_wall_us > 0) return frame.capture_wall_us;
  // A local source: its capture on the steady clock, placed on the wall clock.
  return wall_now_us() - std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - frame.capture_time).count();
}

class RedisSink final : public Sink {
 public:
  RedisSink(transport::RedisClient client, int64_t maxlen, int64_t reconnect_for_ms, const SinkContext& context)
      : client_(std::move(client)), maxlen_(maxlen), reconnect_for_ms_(reconnect_for_ms), context_(context) {}

  std::string name() const override { return "redis " + client_.uri().redacted(); }

  Status write(const FrameResult& result) override {
    const auto s = static_cast<size_t>(result.frame.source_id);
    const std::string& source = !result.frame.source_name.empty() ? result.frame.source_name
                                : s < context_.sources.size()    ? context_.sources[s].uri
                                                                 : std::string();
    std::lock_guard<std::mutex> lock(mutex_);  // one connection for every source's thread
    message_ = encode_detections_message(result, source, context_.model_name, context_.class_names);
    SD_TRY(add(client_.uri().stream, "detections", message_));
    // Line crossings and zone entries and exits (--line, --zone): one entry each in STREAM:events,
    // after the frame's detections, the JSON of the --events file in its "event" field.
    for (const CountEvent& e : result.events) {
      message_ = count_event_json(e, json_quote(source));
      SD_TRY(add(client_.uri().stream + ":events", "event", message_));
    }
    return ok();
  }

  Status finish() override { return ok(); }

 private:
  Status add(const std::string& stream, std::string_view field, const std::string& value) {
    while (true) {
      auto r = client_.xadd(stream, maxlen_, {{field, value}});
      if (r) return ok();
      if (!client_.connection_lost()) return fail(ErrorCode::kOutput, r.error().message);
      // Sent again after a reconnect: if the first XADD was stored, the entry is there twice.
      auto st = transport::reconnect_with_backoff(client_, std::chrono::milliseconds(reconnect_for_ms_), context_.should_stop);
      if (!st) return fail(ErrorCode::kOutput, st.error().message);
    }
  }

  transport::RedisClient client_;
  int64_t maxlen_, reconnect_for_ms_;
  SinkContext context_;
  std::mutex mutex_;
  std::string message_;  // reused
};

void set_box(streamdet::wire::Box* b, float x1, float y1, float x2, float y2) {
  b->set_x1(x1);
  b->set_y1(y1);
  b->set_x2(x2);
  b->set_y2(y2);
}

}  // namespace

std::string encode_detections_message(const FrameResult& result, const std::string& source_id, const std::string& model,
                                      const std::vector<std::string>& class_names) {
  const Frame& f = result.frame;
  const cv::Size size = f.original_size.empty() ? f.size() : f.original_size;
  streamdet::wire::Detections m;
  m.set_source_id(source_id);
  m.set_frame_index(f.index);
  m.set_capture_time_us(wall_us_of(f));
  m.set_width(static_cast<uint32_t>(size.width));
  m.set_height(static_cast<uint32_t>(size.height));
  m.set_model(model);
  for (const auto& n : class_names) m.add_class_names(n);
  const float w = size.width > 0 ? static_cast<float>(size.width) : 1.f, h = size.height > 0 ? static_cast<float>(size.height) : 1.f;
  for (const Detection& d : result.detections) {
    auto* out = m.add_detections();
    set_box(out->mutable_box(), d.x1, d.y1, d.x2, d.y2);
    set_box(out->mutable_box_normalized(), d.x1 / w, d.y1 / h, d.x2 / w, d.y2 / h);
    out->set_class_id(d.class_id);
    out->set_confidence(d.score);
    if (d.track_id > 0) out->set_track_id(d.track_id);
  }
  for (const StageTiming& t : result.timings) {
    if (!*t.stage) continue;
    auto* timing = m.add_timings();
    timing->set_stage(t.stage);
    timing->set_ms(t.ms);
  }
  return m.SerializeAsString();
}

Result<std::unique_ptr<Sink>> open_redis_sink(const std::string& target, const SinkContext& context) {
  SD_ASSIGN_OR_RETURN(transport::RedisUri uri, transport::parse_redis_uri(target, context.redis_password));
  SD_TRY(transport::check_query_keys(uri, {"maxlen", "reconnect-for"}));
  SD_ASSIGN_OR_RETURN(int64_t maxlen, transport::query_int(uri, "maxlen", 100000, 0, int64_t{1} << 40));
  SD_ASSIGN_OR_RETURN(int64_t reconnect_for, transport::query_int(uri, "reconnect-for", 60000, 0, int64_t{1} << 40));
  auto client = transport::RedisClient::connect(uri, std::chrono::milliseconds(2000));
  if (!client) return fail(ErrorCode::kOutput, client.error().message);
  return std::unique_ptr<Sink>(std::make_unique<RedisSink>(std::move(*client), maxlen, reconnect_for, context));
}

}  // namespace sd
