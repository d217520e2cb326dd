// Chrome trace-event export (loads in Perfetto and chrome://tracing): one track per thread,
// one complete ("X") event per stage per frame, with the frame id and source as arguments.
#pragma once

#include <string>

#include "core/error.h"
#include "runtime/profiler.h"

namespace sd {

// Writes to `path`; errors name `shown_as` (the output's final name when `path` is its temporary
// file, sinks/atomic_file.h), or `path` when it is empty.
Status write_chrome_trace(const Profiler& profiler, const std::string& path, const std::string& shown_as = "");

}  // namespace sd
