// Frames from a Redis stream, read through a consumer group so that several workers (on one
// machine or many) share one stream, each entry going to one of them:
//   --source 'redis://[user:pass@]host:port/STREAM?group=streamdet&consumer=NAME'
// At-least-once: an entry is acknowledged (XACK) only when the pipeline settles its frame as done
// (written, or dropped by a rule the user chose); a worker first re-reads its own pending entries,
// and claims (XAUTOCLAIM) those left pending on a dead worker longer than claim-after. A live
// worker keeps the entries it holds fresh (their idle time reset every claim-after/3), so a busy
// worker's entries are not taken from it. Entries too
// old for --max-age are acknowledged unread and counted. Bad entries (malformed, missing fields,
// over max-pixels, corrupt JPEG, wrong raw size) go to the dead-letter stream STREAM:dead with the
// reason, are acknowledged, and logged once per kind; they never stop the worker. A lost server is
// reconnected with backoff for up to reconnect-for ms. The stream has no end: a worker runs until
// stopped, or with drain=1 until nothing is left for its group (none undelivered, none pending).
// On a stop request it fetches nothing more and hands out the entries it fetched already
// (has_read_ahead), so that they are finished and acknowledged; what the run does not finish
// stays pending, and close() learns from Redis how many (left_pending).
// Query keys: group, consumer, claim-after, count, block, drain, max-pixels, dead, dead-maxlen,
// reconnect-for (docs/scale-out.md).
#pragma once

#include <memory>
#include <string>

#include "core/error.h"
#include "sources/source.h"

namespace sd {

// redis:// (or rediss://, refused with its reason), in any case.
bool is_redis_spec(const std::string& spec);

Result<std::unique_ptr<Source>> open_redis_source(const std::string& spec, const SourceOptions& options);

}  // namespace sd
