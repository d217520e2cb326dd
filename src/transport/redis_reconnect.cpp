#include "transport/redis_reconnect.h"

#include <cstdio>
#include <thread>

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
    const auto wake = std::chrono::steady_clock::now() + backoff.next();
    if (wake > deadline) {
      char after[48];
      std::snprintf(after, sizeof after, " (gave up reconnecting after %.1f s)", give_up_after.count() / 1000.0);
      return fail(ErrorCode::kSource, last.error().message + after);
    }
    while (std::chrono::steady_clock::now() < wake) {
      if (should_stop && should_stop()) return fail(ErrorCode::kInterrupted, client.uri().redacted() + ": stopped while reconnecting");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

}  // namespace sd::transport
