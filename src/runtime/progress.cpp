#include "runtime/progress.h"

#include <unistd.h>

#include <cstdio>

namespace sd {

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled && isatty(STDERR_FILENO)) {
  start_ = last_ = Clock::now();
}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::update(int64_t done, int64_t total) {
  if (!enabled_) return;
  auto now = Clock::now();
  if (now - last_ < std::chrono::milliseconds(250)) return;
  last_ = now;
  double secs = std::chrono::duration<double>(now - start_).count();
  double fps = secs > 0 ? static_cast<double>(done) / secs : 0;
  if (total > 0) {
    double eta = fps > 0 ? static_cast<double>(total - done) / fps : 0;
    std::fprintf(stderr, "\r\033[K%lld/%lld frames  %.1f fps  ETA %02d:%02d", static_cast<long long>(done),
                 static_cast<long long>(total), fps, static_cast<int>(eta) / 60, static_cast<int>(eta) % 60);
  } else {
    std::fprintf(stderr, "\r\033[K%lld frames  %.1f fps", static_cast<long long>(done), fps);
  }
  std::fflush(stderr);
  printed_ = true;
}

void ProgressLine::finish() {
  if (enabled_ && printed_) std::fprintf(stderr, "\r\033[K");
  printed_ = false;
}

}  // namespace sd
