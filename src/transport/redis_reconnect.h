// Getting a lost Redis connection back: attempts with a growing pause (transport/backoff.h) for
// at most `give_up_after`, the pause cut into short sleeps so that a stop request ends it soon.
#pragma once

#include <chrono>
#include <functional>

#include "core/error.h"
#include "transport/redis_client.h"

namespace sd::transport {

// ok() once connected (at once when the connection is not lost); kSource naming the server and
// the last problem after `give_up_after`; kInterrupted when `should_stop` says so first.
Status reconnect_with_backoff(RedisClient& client, std::chrono::milliseconds give_up_after,
                              const std::function<bool()>& should_stop);

}  // namespace sd::transport
