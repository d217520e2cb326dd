#include "serve/metrics_text.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace sd {
namespace {

// Writes one metric family: its HELP and TYPE lines, then samples added with sample().
class Family {
 public:
  Family(std::string& out, const char* name, const char* type, const char* help) : out_(out), name_(name) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  // `labels` already formatted (`a="x",b="y"`), or empty.
  void sample(const std::string& labels, double value, const char* suffix = "") {
    out_ += name_;
    out_ += suffix;
    if (!labels.empty()) out_ += "{" + labels + "}";
    char buf[64];
    std::snprintf(buf, sizeof buf, " %.17g\n", value);
    out_ += buf;
  }
  void sample(const std::string& labels, int64_t value, const char* suffix = "") {
    out_ += name_;
    out_ += suffix;
    if (!labels.empty()) out_ += "{" + labels + "}";
    char buf[32];
    std::snprintf(buf, sizeof buf, " %" PRId64 "\n", value);
    out_ += buf;
  }

 private:
  std::string& out_;
  const char* name_;
};

std::string label(const char* name, const std::string& value) {
  return std::string(name) + "=\"" + prometheus_label_value(value) + "\"";
}

std::string source_label(const LiveSourceStats& s) { return label("source", s.name); }

void stage_histograms(std::string& out, const LiveStats& stats) {
  Family h(out, "streamdet_stage_duration_seconds", "histogram",
           "Time of one call of a stage (a batch of frames counts once).");
  for (int i = 0; i < kStageCount; ++i) {
    const auto& s = stats.stages[static_cast<size_t>(i)];
    const std::string stage = label("stage", stage_name(static_cast<Stage>(i)));
    int64_t cumulative = 0;
    for (size_t b = 0; b < LiveMetrics::kBuckets; ++b) {
      cumulative += s.buckets[b];
      char le[32];
      if (b < LiveMetrics::kBucketSeconds.size()) std::snprintf(le, sizeof le, "%g", LiveMetrics::kBucketSeconds[b]);
      else std::snprintf(le, sizeof le, "+Inf");
      h.sample(stage + "," + label("le", le), cumulative, "_bucket");
    }
    h.sample(stage, s.busy_ms / 1000.0, "_sum");
    h.sample(stage, s.calls, "_count");
  }
  Family items(out, "streamdet_stage_frames_total", "counter", "Frames a stage handled.");
  for (int i = 0; i < kStageCount; ++i)
    items.sample(label("stage", stage_name(static_cast<Stage>(i))), stats.stages[static_cast<size_t>(i)].items);
  Family threads(out, "streamdet_stage_threads", "gauge", "Threads that have run a stage.");
  for (int i = 0; i < kStageCount; ++i)
    threads.sample(label("stage", stage_name(static_cast<Stage>(i))),
                   static_cast<int64_t>(stats.stages[static_cast<size_t>(i)].threads));
  Family wait(out, "streamdet_stage_wait_seconds_total", "counter", "Time a stage's threads waited for input.");
  for (int i = 0; i < kStageCount; ++i)
    wait.sample(label("stage", stage_name(static_cast<Stage>(i))), stats.stages[static_cast<size_t>(i)].wait_ms / 1000.0);
  Family blocked(out, "streamdet_stage_blocked_seconds_total", "counter",
                 "Time a stage's threads waited for room in a full output queue.");
  for (int i = 0; i < kStageCount; ++i)
    blocked.sample(label("stage", stage_name(static_cast<Stage>(i))),
                   stats.stages[static_cast<size_t>(i)].blocked_ms / 1000.0);
}

void source_counters(std::string& out, const LiveStats& stats) {
  Family read(out, "streamdet_frames_read_total", "counter", "Frames read from a source.");
  for (const auto& s : stats.sources) read.sample(source_label(s), s.frames_read);
  Family done(out, "streamdet_frames_done_total", "counter", "Frames that reached every output.");
  for (const auto& s : stats.sources) done.sample(source_label(s), s.frames_done);
  Family dropped(out, "streamdet_frames_dropped_total", "counter", "Frames not processed, by reason.");
  for (const auto& s : stats.sources)
    for (int r = 0; r < kDropReasonCount; ++r)
      dropped.sample(source_label(s) + "," + label("reason", drop_reason_name(static_cast<DropReason>(r))),
                     s.drops[static_cast<size_t>(r)]);
  if (std::any_of(stats.sources.begin(), stats.sources.end(), [](const LiveSourceStats& s) { return s.tracked; })) {
    Family tracks(out, "streamdet_live_tracks", "gauge", "Confirmed tracks in a tracked source's latest frame (--track).");
    for (const auto& s : stats.sources)
      if (s.tracked) tracks.sample(source_label(s), s.live_tracks);
  }
  Family queue(out, "streamdet_queue_depth", "gauge", "Frames waiting in front of a stage.");
  for (const auto& s : stats.sources)
    for (int q = 0; q < kLiveQueueCount; ++q)
      queue.sample(source_label(s) + "," + label("queue", live_queue_name(static_cast<LiveQueue>(q))),
                   s.queues[static_cast<size_t>(q)]);
}

void source_health(std::string& out, const LiveStats& stats) {
  Family up(out, "streamdet_source_up", "gauge",
            "1 while a source is connecting, live or ended as expected; 0 while it is stalled, in backoff or failed.");
  for (const auto& s : stats.sources) up.sample(source_label(s), static_cast<int64_t>(source_state_is_up(s.health.state) && !s.health.in_outage));
  Family state(out, "streamdet_source_state", "gauge", "1 for a source's current state, 0 for the others.");
  constexpr SourceState kStates[] = {SourceState::kConnecting, SourceState::kLive,  SourceState::kStalled,
                                     SourceState::kBackoff,    SourceState::kEnded, SourceState::kFailed};
  for (const auto& s : stats.sources)
    for (SourceState st : kStates)
      state.sample(source_label(s) + "," + label("state", source_state_name(st)), static_cast<int64_t>(s.health.state == st));
  Family reconnects(out, "streamdet_source_reconnects_total", "counter", "Successful re-openings after an outage.");
  for (const auto& s : stats.sources) reconnects.sample(source_label(s), s.health.reconnects);
  Family outages(out, "streamdet_source_outages_total", "counter", "Times a source went down (stall, error, early end).");
  for (const auto& s : stats.sources) outages.sample(source_label(s), s.health.outages);
  Family outage_seconds(out, "streamdet_source_outage_seconds_total", "counter", "Time a source was down, the current outage included.");
  for (const auto& s : stats.sources) outage_seconds.sample(source_label(s), s.health.outage_ms / 1000.0);
  Family lost(out, "streamdet_source_frames_lost_total", "counter",
              "Frames lost to outages, estimated from the source's frame rate.");
  for (const auto& s : stats.sources) lost.sample(source_label(s), s.health.frames_lost_to_outages);
}

// --line and --zone (analytics/lines_zones.h): only when the run has some.
void counting_metrics(std::string& out, const CountingReport& counts) {
  if (counts.empty()) return;
  Family crossings(out, "streamdet_line_crossings_total", "counter",
                   "Tracks that crossed a line, by direction (in: from its left to its right) and class.");
  for (const auto& l : counts.lines)
    for (const char* direction : {"in", "out"})
      for (const auto& [name, n] : std::string(direction) == "in" ? l.in_by_class : l.out_by_class)
        crossings.sample(label("source", l.source) + "," + label("line", l.name) + "," + label("direction", direction) + "," +
                             label("class", name),
                         n);
  Family entries(out, "streamdet_zone_entries_total", "counter", "Tracks that entered a zone (or were first seen inside).");
  for (const auto& z : counts.zones) entries.sample(label("source", z.source) + "," + label("zone", z.name), z.entries);
  Family exits(out, "streamdet_zone_exits_total", "counter", "Tracks that left a zone.");
  for (const auto& z : counts.zones) exits.sample(label("source", z.source) + "," + label("zone", z.name), z.exits);
  Family occupancy(out, "streamdet_zone_occupancy", "gauge", "Tracks inside a zone now.");
  for (const auto& z : counts.zones) occupancy.sample(label("source", z.source) + "," + label("zone", z.name), z.occupancy);
  Family dwell(out, "streamdet_zone_dwell_seconds", "summary", "Time tracks spent inside a zone, counted when they left.");
  for (const auto& z : counts.zones) {
    dwell.sample(label("source", z.source) + "," + label("zone", z.name), z.dwell_total_ms / 1000.0, "_sum");
    dwell.sample(label("source", z.source) + "," + label("zone", z.name), z.dwell_count, "_count");
  }
}

}  // namespace

std::string prometheus_label_value(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string prometheus_text(const LiveStats& stats) {
  std::string out;
  out.reserve(16384);
  source_counters(out, stats);
  source_health(out, stats);
  counting_metrics(out, stats.counting);
  stage_histograms(out, stats);
  Family cpu(out, "streamdet_cpu_seconds_total", "counter", "CPU time of the process, every thread.");
  cpu.sample("", stats.cpu_ms / 1000.0);
  Family workers(out, "streamdet_workers", "gauge", "Inference workers.");
  workers.sample("", static_cast<int64_t>(stats.workers));
  if (stats.gpu_busy >= 0) {
    Family gpu(out, "streamdet_gpu_busy_ratio", "gauge", "Share of the run so far in which the GPU ran a kernel (NVML, 0..1).");
    gpu.sample("", stats.gpu_busy);
  }
  Family uptime(out, "streamdet_uptime_seconds", "gauge", "Time since the web server started.");
  uptime.sample("", stats.uptime_s);
  return out;
}

}  // namespace sd
