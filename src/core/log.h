// Minimal stderr logging: one line per message, prefixed with the program name. Quiet mode
// silences info; warnings and errors always print.
#pragma once

#include <cstdarg>

namespace sd {

void set_log_quiet(bool quiet);
bool log_quiet();
// --verbose: third-party libraries (FFmpeg, OpenCV, GStreamer/GLib) may print their own messages;
// without it they are silenced and their text is folded into our one-line errors.
void set_log_verbose(bool verbose);
bool log_verbose();
void log_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Information printed even with --quiet: what a user needs to use the run at all (the address of
// the web view when --serve picked a free port).
void log_notice(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace sd
