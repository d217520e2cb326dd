// Validators for numeric command-line values that say what is wanted in human terms
// ("--iou: must be a number in (0, 1], got nan"). CLI11's own range checks print the limits of a
// double in 309 digits and let NaN through (every comparison with NaN is false).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace sd {

// The whole text as a finite number / an integer; nullopt for anything else (nan, inf, "1x", "").
std::optional<double> parse_finite_number(const std::string& text);
std::optional<int64_t> parse_integer(const std::string& text);

enum class Interval { kClosed, kOpenLow, kOpenHigh };  // [lo, hi], (lo, hi], [lo, hi)

// A finite real number between lo and hi; `unit` ("ms") goes into the message.
CLI::Validator real_in(double lo, double hi, Interval interval = Interval::kClosed, const std::string& unit = "");
// An integer from lo to hi (inclusive).
CLI::Validator integer_in(int64_t lo, int64_t hi, const std::string& unit = "");
// --preprocess overrides, checked on their own before anything is loaded.
CLI::Validator preprocess_overrides();

}  // namespace sd
