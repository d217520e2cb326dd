#include "serve/health_json.h"

#include <nlohmann/json.hpp>

#include "core/uri_redaction.h"

namespace sd {

nlohmann::json source_health_json(const LiveSourceStats& s, int64_t now_wall_us) {
  const SourceHealthSnapshot& h = s.health;
  nlohmann::json j;
  j["source"] = s.name;
  j["state"] = source_state_name(h.state);
  j["up"] = source_state_is_up(h.state) && !h.in_outage;
  j["frames"] = h.frames;
  j["reconnects"] = h.reconnects;
  j["outages"] = h.outages;
  j["outage_seconds"] = h.outage_ms / 1000.0;
  j["frames_lost"] = h.frames_lost_to_outages;
  if (h.last_frame_wall_us > 0) j["last_frame_age_seconds"] = static_cast<double>(now_wall_us - h.last_frame_wall_us) / 1e6;
  else j["last_frame_age_seconds"] = nullptr;
  j["last_error"] = without_password(h.last_error);
  return j;
}

nlohmann::json health_json(const LiveStats& stats, int64_t now_wall_us) {
  std::vector<SourceHealthSnapshot> snapshots;
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& s : stats.sources) {
    snapshots.push_back(s.health);
    sources.push_back(source_health_json(s, now_wall_us));
  }
  nlohmann::json j;
  j["status"] = HealthBoard::overall(snapshots);
  j["uptime_seconds"] = stats.uptime_s;
  j["sources"] = std::move(sources);
  return j;
}

bool health_is_ok(const nlohmann::json& health) { return health.value("status", "") == "ok"; }

}  // namespace sd
