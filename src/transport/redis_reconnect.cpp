#include "transport/redis_reconnect.h"

#include <cstdio>

#include "core/log.h"
#include "transport/backoff.h"

namespace sd::transport {

Status reconnect_with_backoff(RedisClient& client, std::chrono::milliseconds give_up_after,
                              const std::function<bool()>& should_stop) {
  if (!client.connection_lost()) return ok();
  const auto deadline = std::chrono::steady_clock::now() + give_up_after;
  Backoff backoff;
  Status last = ok();
  log_warn("%s: connection lost; reconnecting", client.uri().redacted().c_str());
  while (true) {
    last = client.reconnect();
    if (last) {
      log_info("%s: reconnected after %d attempt%s", client.uri().redacted().c_str(), backoff.failures() + 1,
               backoff.failures() == 0 ? "" : "s");
      return ok();
    }
    const std::chrono::milliseconds delay = backoff.next();
    if (std::chrono::steady_clock::now() + delay > deadline) {
      char after[48];
      std::snprintf(after, sizeof after, " (gave up reconnecting after %.1f s)", give_up_after.count() / 1000.0);
      return fail(ErrorCode::kSource, last.error().message + after);
    }
    if (!wait_unless_stopped(delay, should_stop, std::chrono::milliseconds(10)))
      return fail(ErrorCode::kInterrupted, client.uri().redacted() + ": stopped while reconnecting");
  }
}

}  // namespace sd::transport
