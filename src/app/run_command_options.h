// `streamdet run`'s options: declared once on a CLI::App, then resolved into RunOptions. The
// command line (app/cli.cpp) and programs that embed the run (the Python module's
// streamdet.run(**options)) fill RunOptions through these, with the same checks and messages.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/error.h"
#include "runtime/run_options.h"

namespace sd {

// Options shared by `run` and `bench`: which model, how to feed it, how to decode it (`layout`:
// the --layout text, for resolve_layout()).
void add_model_options(CLI::App& cmd, ModelOptions& m, std::string& layout);
Status resolve_layout(const std::string& text, ModelOptions& m);

// What the options write while parsing: RunOptions itself, and the texts and seconds that
// resolve_run_flags() turns into its enums and milliseconds.
struct RunFlags {
  RunOptions run;
  std::string layout = "auto", policy = "auto", reconnect = "auto", track = "auto";
  std::string track_appearance = "on";  // --track-appearance on|off
  double stall_s = 5, reconnect_for_s = 0, drain_timeout_s = 5;
  CLI::Option* new_track = nullptr;
  std::vector<std::string> lines, zones;  // --line, --zone as given (analytics/place_specs.h)
};

// Adds every option of `streamdet run` to `cmd` (-m and -s included), writing into `flags`.
void add_run_options(CLI::App& cmd, RunFlags& flags);
// After parsing: the policy, tracking, lines and zones, reconnect, times and layout, checked (kUsage).
Status resolve_run_flags(RunFlags& flags);

// One keyword of a program that embeds the run: an option's long name without its dashes
// (underscores for the dashes inside: max_age is --max-age) and its values as text (several for
// an option that repeats); a flag takes "true" or "false".
struct RunKeyword {
  std::string name;
  std::vector<std::string> values;
};
// RunOptions for `model` and `sources` with `keywords`, parsed and checked as the command line's
// (the same messages, kUsage); a keyword that is no option of `run` is refused by its name.
Result<RunOptions> run_options_from_keywords(const std::string& model, const std::vector<std::string>& sources,
                                             const std::vector<RunKeyword>& keywords);

// REDISCLI_AUTH, as redis-cli reads it: a password kept out of the command line (and so out of
// `ps`), for redis:// URIs that carry none. A credential, not a switch.
std::optional<std::string> redis_password_from_environment();

}  // namespace sd
