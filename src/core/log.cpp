#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

#include <opencv2/core/utils/logger.hpp>

namespace sd {
namespace {
std::atomic<bool> g_quiet{false};
std::atomic<bool> g_verbose{false};
std::mutex g_log_mutex;

void vlog(const char* prefix, const char* fmt, va_list args) {
  char buf[2048];
  std::vsnprintf(buf, sizeof buf, fmt, args);
  std::lock_guard<std::mutex> lock(g_log_mutex);
  std::fprintf(stderr, "streamdet: %s%s\n", prefix, buf);
}
}  // namespace

void set_log_quiet(bool quiet) { g_quiet = quiet; }
bool log_quiet() { return g_quiet; }
void set_log_verbose(bool verbose) {
  g_verbose = verbose;
  // OpenCV's own warnings ("[ WARN:0@0.01] global cap_v4l.cpp ...") only with --verbose: our
  // one line names the thing and the problem.
  cv::utils::logging::setLogLevel(verbose ? cv::utils::logging::LOG_LEVEL_WARNING : cv::utils::logging::LOG_LEVEL_SILENT);
}
bool log_verbose() { return g_verbose; }

void log_info(const char* fmt, ...) {
  if (g_quiet) return;
  va_list args;
  va_start(args, fmt);
  vlog("", fmt, args);
  va_end(args);
}

void log_notice(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vlog("", fmt, args);
  va_end(args);
}

void log_warn(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vlog("warning: ", fmt, args);
  va_end(args);
}

void log_error(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vlog("error: ", fmt, args);
  va_end(args);
}

}  // namespace sd
