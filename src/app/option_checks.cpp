#include "app/option_checks.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "preprocess/preprocess_spec.h"

namespace sd {

namespace {

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string quoted_value(const std::string& text) { return text.empty() ? "nothing" : text; }

}  // namespace

std::optional<double> parse_finite_number(const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> parse_integer(const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

CLI::Validator real_in(double lo, double hi, Interval interval, const std::string& unit) {
  const std::string range = std::string(interval == Interval::kOpenLow ? "(" : "[") + number_text(lo) + ", " + number_text(hi) +
                            (interval == Interval::kOpenHigh ? ")" : "]");
  const std::string wanted = "must be a number" + (unit.empty() ? "" : " of " + unit) + " in " + range;
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        auto v = parse_finite_number(text);
        const bool fits = v && (interval == Interval::kOpenLow ? *v > lo : *v >= lo) &&
                          (interval == Interval::kOpenHigh ? *v < hi : *v <= hi);
        return fits ? std::string() : wanted + ", got " + quoted_value(text);
      },
      range);
}

CLI::Validator integer_in(int64_t lo, int64_t hi, const std::string& unit) {
  const std::string wanted = "must be a whole number" + (unit.empty() ? "" : " of " + unit) +
                             (hi == INT64_MAX ? " of at least " + std::to_string(lo)
                                              : " from " + std::to_string(lo) + " to " + std::to_string(hi));
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        auto v = parse_integer(text);
        return v && *v >= lo && *v <= hi ? std::string() : wanted + ", got " + quoted_value(text);
      },
      hi == INT64_MAX ? ">=" + std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi));
}

CLI::Validator preprocess_overrides() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        PreprocessSpec scratch;
        auto st = apply_preprocess_overrides(text, scratch);
        if (st) return std::string();
        std::string message = st.error().message;  // CLI11 puts the option's name in front already
        const std::string prefix = "--preprocess ";
        return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
      },
      "");
}

}  // namespace sd
