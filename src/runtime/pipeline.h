// `streamdet run`: source -> preprocess -> inference -> postprocess -> draw -> sinks, with the
// profile recorded around every stage.
#pragma once

#include "core/error.h"
#include "runtime/profiler.h"
#include "runtime/run_options.h"

namespace sd {

struct RunOutcome {
  Status status;          // the first error, or kInterrupted after Ctrl-C; outputs are finalized either way
  ProfileReport profile;  // what was done until then
  bool started = false;   // false when set-up failed before any frame was read
};

RunOutcome run_detection(const RunOptions& options);

}  // namespace sd
