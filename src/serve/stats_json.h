// /stats: what the web page shows, polled once a second: per stage FPS, busy share and latency,
// per source FPS, counts, drops by reason, queue depths and health, and the live verdict.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "runtime/live_stats.h"
#include "serve/live_window.h"

namespace sd {

nlohmann::json stats_json(const LiveStats& stats, const LiveRates& rates, int64_t now_wall_us);

}  // namespace sd
