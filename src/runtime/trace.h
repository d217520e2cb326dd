// Chrome trace-event export (loads in Perfetto and chrome://tracing): one track per thread,
// one complete ("X") event per stage per frame, with the frame id and source as arguments.
#pragma once

#include <string>

#include "core/error.h"
#include "runtime/profiler.h"

namespace sd {

Status write_chrome_trace(const Profiler& profiler, const std::string& path);

}  // namespace sd
