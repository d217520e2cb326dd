// /metrics: a live reading in Prometheus' text exposition format (version 0.0.4). Names follow
// Prometheus' conventions: the streamdet_ prefix, base units (_seconds), _total on counters, one
// histogram per stage with cumulative le buckets, _sum and _count. docs/observe.md lists them.
#pragma once

#include <string>

#include "runtime/live_stats.h"

namespace sd {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string prometheus_text(const LiveStats& stats);

// A label value escaped as the format asks: backslash, double quote and line feed.
std::string prometheus_label_value(const std::string& value);

}  // namespace sd
