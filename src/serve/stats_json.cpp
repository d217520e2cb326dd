#include "serve/stats_json.h"

#include <nlohmann/json.hpp>

#include "serve/health_json.h"

namespace sd {

nlohmann::json stats_json(const LiveStats& stats, const LiveRates& rates, int64_t now_wall_us) {
  nlohmann::json j;
  j["uptime_seconds"] = stats.uptime_s;
  j["window_seconds"] = rates.window_s;
  j["workers"] = stats.workers;
  j["cores"] = stats.cores;
  j["verdict"] = rates.window_s > 0 ? rates.verdict : "measuring...";
  nlohmann::json stages = nlohmann::json::array();
  for (int i = 0; i < kStageCount; ++i) {
    const auto& s = stats.stages[static_cast<size_t>(i)];
    nlohmann::json st;
    st["stage"] = stage_name(static_cast<Stage>(i));
    st["fps"] = rates.stage_fps[static_cast<size_t>(i)];
    st["busy"] = rates.stage_busy[static_cast<size_t>(i)];
    st["threads"] = s.threads;
    st["frames"] = s.items;
    st["mean_ms"] = s.calls > 0 ? s.busy_ms / static_cast<double>(s.calls) : 0.0;
    stages.push_back(std::move(st));
  }
  j["stages"] = std::move(stages);
  std::vector<SourceHealthSnapshot> snapshots;
  nlohmann::json sources = nlohmann::json::array();
  for (size_t i = 0; i < stats.sources.size(); ++i) {
    const LiveSourceStats& s = stats.sources[i];
    snapshots.push_back(s.health);
    nlohmann::json src = source_health_json(s, now_wall_us);
    src["index"] = i;
    src["frames_read"] = s.frames_read;
    src["frames_done"] = s.frames_done;
    src["read_fps"] = i < rates.source_read_fps.size() ? rates.source_read_fps[i] : 0.0;
    src["done_fps"] = i < rates.source_done_fps.size() ? rates.source_done_fps[i] : 0.0;
    nlohmann::json drops = nlohmann::json::object();
    for (int r = 0; r < kDropReasonCount; ++r) drops[drop_reason_name(static_cast<DropReason>(r))] = s.drops[static_cast<size_t>(r)];
    src["drops"] = std::move(drops);
    if (s.tracked) src["live_tracks"] = s.live_tracks;
    nlohmann::json queues = nlohmann::json::object();
    for (int q = 0; q < kLiveQueueCount; ++q) queues[live_queue_name(static_cast<LiveQueue>(q))] = s.queues[static_cast<size_t>(q)];
    src["queues"] = std::move(queues);
    sources.push_back(std::move(src));
  }
  j["status"] = HealthBoard::overall(snapshots);
  j["sources"] = std::move(sources);
  return j;
}

}  // namespace sd
