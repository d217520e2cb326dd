#include "report/html_report.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <nlohmann/json.hpp>

#include "core/build_info.h"
#include "core/uri_redaction.h"
#include "report/html_report_page.h"

namespace sd {

namespace {

double rounded_ms(double ms) { return std::round(ms * 1000.0) / 1000.0; }  // to the microsecond: a smaller page

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

nlohmann::json spans_json(const Profiler& profiler, bool& truncated) {
  const Clock::time_point origin = profiler.start_time();
  auto ms = [&](Clock::time_point t) { return std::chrono::duration<double, std::milli>(t - origin).count(); };
  nlohmann::json threads = nlohmann::json::array();
  size_t total = 0;
  for (const StageRecorder* rec : profiler.recorders()) {
    nlohmann::json spans = nlohmann::json::array();
    truncated |= rec->spans_truncated();
    for (const TraceSpan& s : rec->spans()) {
      if (total >= kReportMaxSpans) {
        truncated = true;
        break;
      }
      const double begin = ms(s.begin);
      spans.push_back({static_cast<int>(s.stage), rounded_ms(begin), rounded_ms(ms(s.end) - begin), s.source_id, s.frame, s.items});
      ++total;
    }
    threads.push_back({{"name", rec->thread_name()}, {"spans", std::move(spans)}});
  }
  return threads;
}

}  // namespace

nlohmann::json report_data(const Profiler& profiler, const ProfileReport& report, const ReportContext& context) {
  nlohmann::json d;
  d["profile"] = profile_to_json(report);
  nlohmann::json bins = nlohmann::json::array();
  for (const auto& b : report.latency_bins) bins.push_back({rounded_ms(b.lo_ms), rounded_ms(b.hi_ms), b.count});
  d["latency_bins"] = std::move(bins);
  nlohmann::json stages = nlohmann::json::array();
  for (int i = 0; i < kStageCount; ++i) stages.push_back(stage_name(static_cast<Stage>(i)));
  d["stage_names"] = std::move(stages);
  bool truncated = false;
  d["threads"] = spans_json(profiler, truncated);
  d["spans_truncated"] = truncated;
  d["model"] = context.model;
  d["command"] = context.command;
  d["commit"] = build_commit();
  d["machine"] = machine_summary();
  d["written"] = utc_now();
  nlohmann::json health = nlohmann::json::array();
  for (const auto& h : context.health)
    health.push_back({{"uri", h.uri},
                      {"state", source_state_name(h.state)},
                      {"frames", h.frames},
                      {"reconnects", h.reconnects},
                      {"outages", h.outages},
                      {"outage_s", h.outage_ms / 1000.0},
                      {"frames_lost_to_outages", h.frames_lost_to_outages},
                      {"last_error", without_password(h.last_error)}});
  d["health"] = std::move(health);
  return d;
}

std::string render_html_report(const nlohmann::json& data) {
  // Inside <script>, "</" could end the element early: JSON allows "<\/" for it.
  std::string json = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string safe;
  safe.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') {
      safe += "<\\/";
      ++i;
    } else {
      safe += json[i];
    }
  }
  std::string page = html_report_page();
  const std::string marker = "/*STREAMDET_REPORT_DATA*/";
  const size_t at = page.find(marker);
  page.replace(at, marker.size(), safe);
  return page;
}

Status write_html_report(const std::string& path, const std::string& shown_as, const std::string& html) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return fail(ErrorCode::kOutput, "cannot write report to " + shown_as + ": " + std::strerror(errno));
  const bool written = std::fwrite(html.data(), 1, html.size(), f) == html.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) return fail(ErrorCode::kOutput, "writing report " + shown_as + " failed: " + std::strerror(errno));
  return ok();
}

}  // namespace sd
