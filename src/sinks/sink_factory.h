// Every output of a run is a sink opened here from what the user named: `-o out.mp4` (annotated
// video, one per source), `-d dets.jsonl` (JSON Lines), `--sink X` (the kind from X itself: a
// video or .jsonl file name, or a redis:// URI). A new kind of sink is a new file and one row in
// the table of sink_factory.cpp.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sinks/output_paths.h"
#include "sinks/sink.h"

namespace sd {

// What a sink is told about each source of the run (index = source id).
struct SinkSourceInfo {
  std::string uri;
  double fps = 0;
  int width = 0, height = 0;
};

struct SinkContext {
  std::vector<SinkSourceInfo> sources;
  std::vector<std::string> class_names;
  std::string model_name;            // the model's file name, for sinks that record it
  std::optional<std::string> redis_password;  // REDISCLI_AUTH, when the URI has none
  std::function<bool()> should_stop;  // the run is stopping: a sink waiting for a server gives up
};

// An output as named on the command line.
struct SinkTarget {
  enum class Kind { kByName, kVideo, kJsonl, kEvents };
  std::string option;   // "-o", "-d", "--sink", "--events": for messages
  std::string target;   // path or URI
  Kind kind = Kind::kByName;
};

// Opens the sink (kOutput naming the option and target when it cannot be opened; kUsage when the
// name says no kind of sink).
Result<std::unique_ptr<Sink>> open_sink(const SinkTarget& target, const SinkContext& context);

// The files the sink would write, for the check that no output is also an input or written twice
// (empty for a sink that writes no file).
std::vector<NamedFile> sink_files(const SinkTarget& target, const std::vector<std::string>& source_uris);

// Checks that every target names a kind of sink, before anything is opened (kUsage).
Status check_sink_targets(const std::vector<SinkTarget>& targets);

}  // namespace sd
