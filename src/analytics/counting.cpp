#include "analytics/counting.h"

#include <charconv>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "sinks/jsonl_sink.h"

namespace sd {

const char* count_event_name(CountEventKind kind) {
  switch (kind) {
    case CountEventKind::kCrossed: return "crossed";
    case CountEventKind::kEntered: return "entered";
    case CountEventKind::kLeft: return "left";
  }
  return "crossed";
}

namespace {
int64_t sum(const std::map<std::string, int64_t>& m) {
  int64_t n = 0;
  for (const auto& [name, count] : m) n += count;
  return n;
}

std::string by_class(const std::map<std::string, int64_t>& m) {
  std::string out;
  for (const auto& [name, count] : m) out += (out.empty() ? "" : " ") + name + " " + std::to_string(count);
  return out.empty() ? "-" : out;
}

void append_fixed(std::string& out, double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 1);
  out.append(buf, res.ptr);
}
}  // namespace

int64_t LineCounts::in() const { return sum(in_by_class); }
int64_t LineCounts::out() const { return sum(out_by_class); }

void CountingReport::append(const CountingReport& other) {
  lines.insert(lines.end(), other.lines.begin(), other.lines.end());
  zones.insert(zones.end(), other.zones.begin(), other.zones.end());
}

std::string format_counting(const CountingReport& r) {
  if (r.empty()) return "";
  std::string out;
  char line[512];
  for (const auto& l : r.lines) {
    std::snprintf(line, sizeof line, "line %s (%s): in %lld (%s), out %lld (%s)\n", l.name.c_str(), l.source.c_str(),
                  static_cast<long long>(l.in()), by_class(l.in_by_class).c_str(), static_cast<long long>(l.out()),
                  by_class(l.out_by_class).c_str());
    out += line;
  }
  for (const auto& z : r.zones) {
    std::snprintf(line, sizeof line, "zone %s (%s): entries %lld, exits %lld, inside at the end %lld, dwell max %.1f s mean %.1f s\n",
                  z.name.c_str(), z.source.c_str(), static_cast<long long>(z.entries), static_cast<long long>(z.exits),
                  static_cast<long long>(z.occupancy), z.dwell_max_ms / 1000.0, z.dwell_mean_ms() / 1000.0);
    out += line;
  }
  return out;
}

nlohmann::json counting_to_json(const CountingReport& r) {
  nlohmann::json j = {{"lines", nlohmann::json::array()}, {"zones", nlohmann::json::array()}};
  for (const auto& l : r.lines)
    j["lines"].push_back({{"source", l.source}, {"line", l.name}, {"in", l.in()}, {"out", l.out()},
                          {"in_by_class", l.in_by_class}, {"out_by_class", l.out_by_class}});
  for (const auto& z : r.zones)
    j["zones"].push_back({{"source", z.source}, {"zone", z.name}, {"entries", z.entries}, {"exits", z.exits},
                          {"occupancy", z.occupancy}, {"dwell_max_ms", z.dwell_max_ms}, {"dwell_mean_ms", z.dwell_mean_ms()}});
  return j;
}

std::string count_event_json(const CountEvent& e, const std::string& source_json) {
  std::string out = "{\"source\": " + source_json + ", \"event\": \"" + count_event_name(e.kind) + "\", ";
  out += e.kind == CountEventKind::kCrossed ? "\"line\": " : "\"zone\": ";
  out += json_quote(e.place);
  if (e.kind == CountEventKind::kCrossed) out += ", \"direction\": \"" + std::string(e.direction) + "\"";
  out += ", \"track_id\": " + std::to_string(e.track_id);
  out += ", \"class_id\": " + std::to_string(e.class_id);
  out += ", \"class_name\": " + json_quote(e.class_name);
  out += ", \"timestamp_ms\": ";
  append_fixed(out, e.timestamp_ms);
  out += ", \"frame\": " + std::to_string(e.frame);
  if (e.kind == CountEventKind::kLeft) {
    out += ", \"dwell_ms\": ";
    append_fixed(out, e.dwell_ms);
  }
  return out + "}";
}

}  // namespace sd
