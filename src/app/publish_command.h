// `streamdet publish`: a producer that streams a video, a camera or any other source into a Redis
// stream, one entry per frame (the Frame message of transport/messages.proto, JPEG or raw BGR, as
// the binary value of the entry's "frame" field), at the source's own rate or as fast as Redis
// takes them, the stream capped at about --maxlen entries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/App.hpp>

#include "core/error.h"

namespace sd {

struct PublishOptions {
  std::string source;
  std::string sink;               // redis://[user:pass@]host:port/STREAM
  std::string fps = "source";     // source: the source's frame rate (live sources: as they come) | max
  int jpeg_quality = 90;          // 1..100; 0: raw BGR
  int64_t maxlen = 1000;          // MAXLEN ~ (0: no cap)
  int64_t max_frames = -1;
  std::string source_id;          // the frames' source id (default: the source as given)
  bool quiet = false;
  std::optional<std::string> redis_password;  // REDISCLI_AUTH
};

void add_publish_options(CLI::App& cmd, PublishOptions& options);
// Publishes until the source ends, --max-frames, or Ctrl-C (then kInterrupted after what was sent).
Status run_publish(const PublishOptions& options);

}  // namespace sd
