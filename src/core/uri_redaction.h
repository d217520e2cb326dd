// The one redaction of passwords in URIs. Every place that writes a source's URI or a message
// that may hold one (the profile, the report, the trace, JSON Lines, Redis messages, metrics
// labels, the web endpoints, logs and error lines) shows it through without_password().
#pragma once

#include <string>
#include <string_view>

namespace sd {

// Every "scheme://user:password@" in `text` becomes "scheme://user:***@" ("scheme://***@" for
// userinfo without ':'), splitting userinfo as the program that reads the URI does: for redis://
// and rediss:// to the last '@' of the text (transport/redis_uri.h), for any other scheme to the
// last '@' before the path, query or fragment ('/', '?', '#'), as FFmpeg does; whitespace ends
// such a URI inside a message or a GStreamer pipeline (a password with a space is written %20).
// "rtsp://admin:hunter2@cam:554/1" -> "rtsp://admin:***@cam:554/1"; text without one is unchanged.
std::string without_password(std::string_view text);

}  // namespace sd
