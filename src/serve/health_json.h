// /health: overall status and each source's health as JSON, for container and systemd health
// checks. The server answers 200 when the overall status is "ok", 503 otherwise.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "runtime/live_stats.h"

namespace sd {

// {"status": "ok"|"degraded"|"down", "uptime_seconds": .., "sources": [{"source", "state", "up",
// "frames", "reconnects", "outages", "outage_seconds", "frames_lost", "last_frame_age_seconds"
// (null before the first frame), "last_error"}]}. `now_wall_us`: the wall clock, for the ages.
nlohmann::json health_json(const LiveStats& stats, int64_t now_wall_us);
bool health_is_ok(const nlohmann::json& health);

// One source's health as JSON (also a part of /stats).
nlohmann::json source_health_json(const LiveSourceStats& source, int64_t now_wall_us);

}  // namespace sd
