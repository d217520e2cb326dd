// Detections into a Redis stream, one entry per frame, the Detections message (transport/
// messages.proto) as the binary value of its "detections" field:
//   --sink 'redis://[user:pass@]host:port/STREAM?maxlen=100000'
// Each entry carries the frame's source id and index as its producer named them, so a consumer
// can drop the rare duplicate that at-least-once delivery makes. The XADD is synchronous: when
// write() returns, the entry is in Redis, and the frame's source may acknowledge it. A lost server
// is reconnected with backoff for up to reconnect-for ms (query keys: maxlen, reconnect-for).
// With --line / --zone, each crossing, entry and exit is an entry of its own in STREAM:events (its
// "event" field: the JSON line of the --events file), added after its frame's detections.
#pragma once

#include <memory>
#include <string>

#include "core/error.h"
#include "sinks/sink.h"

namespace sd {

struct SinkContext;

bool is_redis_sink_target(const std::string& target);

Result<std::unique_ptr<Sink>> open_redis_sink(const std::string& target, const SinkContext& context);

// The Detections message for one frame (exposed for tests and the benchmark).
std::string encode_detections_message(const FrameResult& result, const std::string& source_id, const std::string& model,
                                      const std::vector<std::string>& class_names);

}  // namespace sd
