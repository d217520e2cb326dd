// `streamdet run`: source -> preprocess -> inference -> postprocess -> draw -> sinks, with the
// profile recorded around every stage.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/error.h"
#include "runtime/profiler.h"
#include "runtime/run_options.h"
#include "sinks/sink_factory.h"
#include "sources/source.h"

namespace sd {

struct RunOutcome {
  Status status;          // the first error, or kInterrupted after Ctrl-C; outputs are finalized either way
  ProfileReport profile;  // what was done until then
  bool started = false;   // false when set-up failed before any frame was read
};

RunOutcome run_detection(const RunOptions& options);

// The same with the sources opened by `open` instead of open_source() (tests give their own).
using SourceOpener = std::function<Result<std::unique_ptr<Source>>(const std::string& spec, const SourceOptions& options)>;
RunOutcome run_detection(const RunOptions& options, const SourceOpener& open);

// How a program that embeds the pipeline (the Python module's streamdet.run) takes part in a run:
// a sink of its own, written after the named outputs, and a stop request of its own beside Ctrl-C
// (after which the run drains and ends without an error, as at the end of its sources).
struct RunEmbedding {
  std::function<std::unique_ptr<Sink>(const SinkContext&)> make_sink;  // null: none
  std::function<bool()> stop_requested;  // called from the stage threads; null: only Ctrl-C
  // With --serve: told the web view's address (http://host:port/, the port bound for port 0)
  // before the first frame is read; null: only the log line says it.
  std::function<void(const std::string& url)> web_view_started;
};
RunOutcome run_detection(const RunOptions& options, const RunEmbedding& embedding);

}  // namespace sd
