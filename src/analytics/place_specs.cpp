#include "analytics/place_specs.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace sd {
namespace {

tl::unexpected<Error> bad(const PlaceSpec& spec, const std::string& problem) { return fail(ErrorCode::kUsage, spec.given + ": " + problem); }

bool valid_name(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

Result<PlaceSpec> parse_place_spec(bool zone, const std::string& text) {
  PlaceSpec spec;
  spec.zone = zone;
  spec.given = std::string(zone ? "--zone " : "--line ") + text;
  const char* form = zone ? "[SOURCE/]NAME:x1,y1,x2,y2,x3,y3,..." : "[SOURCE/]NAME:x1,y1,x2,y2";
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return bad(spec, std::string("expected ") + form);
  std::string label = text.substr(0, colon);
  if (const size_t slash = label.find('/'); slash != std::string::npos) {
    spec.source = label.substr(0, slash);
    label = label.substr(slash + 1);
    if (spec.source.empty()) return bad(spec, "empty source before '/'");
  }
  if (!valid_name(label))
    return bad(spec, "the name '" + label + "' must be letters, digits, '-', '_' or '.'");
  spec.name = label;
  bool any_decimal_point = false, all_unit = true;
  const std::string list = text.substr(colon + 1);
  size_t begin = 0;
  while (begin <= list.size()) {
    const size_t end = std::min(list.find(',', begin), list.size());
    const std::string item = list.substr(begin, end - begin);
    double v = 0;
    const auto res = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || res.ec != std::errc() || res.ptr != item.data() + item.size() || !std::isfinite(v))
      return bad(spec, "'" + item + "' is not a number");
    any_decimal_point = any_decimal_point || item.find('.') != std::string::npos;
    all_unit = all_unit && v >= 0 && v <= 1;
    spec.numbers.push_back(v);
    begin = end + 1;
  }
  const size_t n = spec.numbers.size();
  if (!zone && n != 4)
    return bad(spec, "a line needs 4 numbers (x1,y1,x2,y2), got " + std::to_string(n));
  if (zone && n % 2 != 0)
    return bad(spec, "a zone's numbers are x,y pairs, got " + std::to_string(n) + " numbers");
  if (zone && n < 6)
    return bad(spec, "a zone needs at least 3 points (6 numbers), got " + std::to_string(n / 2));
  if (!zone && spec.numbers[0] == spec.numbers[2] && spec.numbers[1] == spec.numbers[3])
    return bad(spec, "the line's two points are the same");
  spec.fractions = all_unit && any_decimal_point;
  return spec;
}

Result<std::vector<SourcePlaces>> resolve_places(const std::vector<PlaceSpec>& specs, const std::vector<PlaceSource>& sources) {
  std::vector<SourcePlaces> out(sources.size());
  for (const PlaceSpec& spec : specs) {
    bool matched = false;
    for (size_t s = 0; s < sources.size(); ++s) {
      const PlaceSource& src = sources[s];
      if (!spec.source.empty() && spec.source != std::to_string(s) && spec.source != src.name) continue;
      matched = true;
      if (!src.tracked)
        return bad(spec, "source " + src.uri +
                                            " is not tracked (--track off, or auto for images and Redis sources): lines "
                                            "and zones count tracks");
      std::vector<Point2> points;
      for (size_t i = 0; i + 1 < spec.numbers.size(); i += 2) {
        Point2 p{spec.numbers[i], spec.numbers[i + 1]};
        if (spec.fractions) p = {p.x * src.width, p.y * src.height};
        if (p.x < 0 || p.y < 0 || p.x > src.width || p.y > src.height)
          return bad(spec, "point (" + number_text(spec.numbers[i]) + "," + number_text(spec.numbers[i + 1]) +
                                              ") is outside source " + src.uri + "'s " + std::to_string(src.width) + "x" +
                                              std::to_string(src.height) + " frame");
        points.push_back(p);
      }
      SourcePlaces& places = out[s];
      auto taken = [&](const auto& list) {
        for (const auto& place : list)
          if (place.name == spec.name) return true;
        return false;
      };
      if (spec.zone ? taken(places.zones) : taken(places.lines))
        return bad(spec, std::string(spec.zone ? "a zone" : "a line") + " named " + spec.name +
                                            " is already on source " + src.uri);
      if (spec.zone) places.zones.push_back({spec.name, points});
      else places.lines.push_back({spec.name, points[0], points[1]});
    }
    if (!matched) {
      std::string known;
      for (size_t s = 0; s < sources.size(); ++s) known += (s ? ", " : "") + std::to_string(s) + " or " + sources[s].name;
      return bad(spec, "no source is named " + spec.source + " (the sources: " + known + ")");
    }
  }
  return out;
}

}  // namespace sd
