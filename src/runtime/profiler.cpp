#include "runtime/profiler.h"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace sd {

const char* stage_name(Stage stage) {
  switch (stage) {
    case Stage::kRead: return "read";
    case Stage::kPreprocess: return "preprocess";
    case Stage::kInference: return "inference";
    case Stage::kPostprocess: return "postprocess";
    case Stage::kDraw: return "draw";
    case Stage::kWrite: return "write";
  }
  return "?";
}

StageRecorder& Profiler::make_recorder(const std::string& thread_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  recorders_.push_back(std::make_unique<StageRecorder>(thread_name));
  return *recorders_.back();
}

ProfileReport Profiler::report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ProfileReport r;
  Clock::time_point end = stop_ == Clock::time_point{} ? Clock::now() : stop_;
  r.wall_ms = std::chrono::duration<double, std::milli>(end - start_).count();
  r.frames = frames_;
  r.corrupt_frames = corrupt_;
  for (int i = 0; i < kStageCount; ++i) {
    auto stage = static_cast<Stage>(i);
    LatencyHistogram merged;
    int64_t items = 0;
    for (const auto& rec : recorders_) {
      merged.merge(rec->stage(stage).latency);
      items += rec->stage(stage).items;
    }
    StageReport s;
    s.name = stage_name(stage);
    s.hits = merged.count();
    s.items = items;
    s.total_ms = merged.total_ms();
    s.per_hit_ms = merged.mean_ms();
    s.percent_of_wall = r.wall_ms > 0 ? 100.0 * s.total_ms / r.wall_ms : 0;
    s.p50_ms = merged.percentile(0.50);
    s.p99_ms = merged.percentile(0.99);
    s.max_ms = merged.max_ms();
    if (stage == Stage::kInference && s.total_ms > 0)
      r.inference_fps = static_cast<double>(items) * 1000.0 / s.total_ms;
    r.stages.push_back(s);
  }
  if (r.wall_ms > 0) r.e2e_fps = static_cast<double>(r.frames) * 1000.0 / r.wall_ms;
  return r;
}

std::string format_profile(const ProfileReport& r) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-12s %8s %12s %10s %8s %10s %10s\n", "Stage", "Hits", "Total ms", "Per hit",
                "% Time", "p50 ms", "p99 ms");
  out += line;
  out += std::string(76, '=') + "\n";
  for (const auto& s : r.stages) {
    if (s.hits == 0) continue;
    std::snprintf(line, sizeof line, "%-12s %8lld %12.1f %10.3f %8.1f %10.3f %10.3f\n", s.name.c_str(),
                  static_cast<long long>(s.hits), s.total_ms, s.per_hit_ms, s.percent_of_wall, s.p50_ms, s.p99_ms);
    out += line;
  }
  out += std::string(76, '-') + "\n";
  std::snprintf(line, sizeof line, "frames %lld in %.1f ms: inference %.2f FPS | end-to-end %.2f FPS",
                static_cast<long long>(r.frames), r.wall_ms, r.inference_fps, r.e2e_fps);
  out += line;
  if (r.corrupt_frames > 0) {
    std::snprintf(line, sizeof line, " | %lld corrupt frames skipped", static_cast<long long>(r.corrupt_frames));
    out += line;
  }
  out += "\n";
  return out;
}

nlohmann::json profile_to_json(const ProfileReport& r) {
  nlohmann::json j;
  j["wall_ms"] = r.wall_ms;
  j["frames"] = r.frames;
  j["corrupt_frames"] = r.corrupt_frames;
  j["inference_fps"] = r.inference_fps;
  j["e2e_fps"] = r.e2e_fps;
  j["stages"] = nlohmann::json::array();
  for (const auto& s : r.stages) {
    j["stages"].push_back({{"stage", s.name},
                           {"hits", s.hits},
                           {"items", s.items},
                           {"total_ms", s.total_ms},
                           {"per_hit_ms", s.per_hit_ms},
                           {"percent_of_wall", s.percent_of_wall},
                           {"p50_ms", s.p50_ms},
                           {"p99_ms", s.p99_ms},
                           {"max_ms", s.max_ms}});
  }
  return j;
}

}  // namespace sd
