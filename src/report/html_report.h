// `streamdet run --report report.html`: the profile as one self-contained HTML page (no network
// needed to view it): the verdict, end-to-end FPS against the inference stage's, the CPU used,
// the stage table, the per-frame latency histogram with p50/p99, a timeline of the stages per
// thread drawn from the trace spans (the picture users drew by hand from nvprof), drops and the
// sources' health. The data is embedded as JSON; the page draws it with a few lines of script.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/error.h"
#include "runtime/profiler.h"
#include "runtime/source_health.h"

namespace sd {

struct ReportContext {
  std::string model;    // as given
  std::string command;  // what was run, for the header ("" to leave out)
  std::vector<SourceHealthSnapshot> health;  // each source's health at the end (may be empty)
};

// Spans beyond this many are left out of the page (the timeline says so); a page stays a few MB.
inline constexpr size_t kReportMaxSpans = 400000;

// The page's data: the profile, the header, the spans per thread (times in ms from the start).
nlohmann::json report_data(const Profiler& profiler, const ProfileReport& report, const ReportContext& context);
// The whole page, with `data` embedded.
std::string render_html_report(const nlohmann::json& data);
// Writes the page to `path` (the caller commits it in place: sinks/atomic_file.h).
Status write_html_report(const std::string& path, const std::string& shown_as, const std::string& html);

}  // namespace sd
