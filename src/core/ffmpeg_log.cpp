#include "core/ffmpeg_log.h"

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <utility>

extern "C" {
#include <libavutil/log.h>
}

#include "core/log.h"
#include "core/uri_redaction.h"

namespace sd {

namespace {

thread_local std::string t_last_error;

void log_callback(void* avcl, int level, const char* fmt, va_list args) {
  if (log_verbose()) {
    // FFmpeg's own line, as its default callback writes it, with any password in a URL hidden.
    if (level > av_log_get_level()) return;
    thread_local int print_prefix = 1;
    char line[1024];
    av_log_format_line(avcl, level, fmt, args, line, sizeof line, &print_prefix);
    std::fputs(without_password(line).c_str(), stderr);
    return;
  }
  if (level > AV_LOG_ERROR) return;
  char line[512];
  std::vsnprintf(line, sizeof line, fmt, args);
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  if (!text.empty()) t_last_error = std::move(text);
}

}  // namespace

void capture_ffmpeg_log() {
  static std::once_flag once;
  std::call_once(once, [] {
    av_log_set_level(AV_LOG_INFO);  // the callback decides what is shown
    av_log_set_callback(log_callback);
  });
}

std::string take_ffmpeg_error() { return std::exchange(t_last_error, std::string()); }

}  // namespace sd
