#include "runtime/interrupt.h"

#include <csignal>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "core/unacknowledged_entries.h"
#include "core/unfinished_files.h"

namespace sd {
namespace {
std::atomic<int> g_signals{0};

// The one line a second signal prints when the process holds entries of a Redis consumer group:
// how many it leaves pending. Only async-signal-safe calls (no printf): digits by hand, write().
void say_entries_left_pending() {
  if (!unacknowledged_entries_tracked()) return;
  char digits[24];
  int n = 0;
  for (uint64_t v = static_cast<uint64_t>(std::max<int64_t>(0, unacknowledged_entries())); n == 0 || v > 0; v /= 10)
    digits[n++] = static_cast<char>('0' + v % 10);
  char line[160] = "streamdet: error: interrupted twice: stopped at once; ";
  size_t len = std::strlen(line);
  while (n > 0) line[len++] = digits[--n];
  const char tail[] = " entries left pending for another worker\n";
  std::memcpy(line + len, tail, sizeof tail - 1);
  len += sizeof tail - 1;
  [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, line, len);
}

// The first signal asks the pipeline to stop reading, drain and finalize. A second one ends the
// process at once: the whole-file outputs still under their temporary names are removed (so
// their final names hold nothing, or an earlier complete file), and the JSON Lines hold whole
// lines (each is written in one write()); entries read from a Redis group and not acknowledged
// stay pending for another worker, and the line says how many.
void on_signal(int) {
  if (g_signals.fetch_add(1) >= 1) {
    remove_unfinished_files();
    say_entries_left_pending();
    _exit(130);
  }
}
}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);  // the terminal went away (ssh dropped): finish like Ctrl-C
  // Past a file-size limit (ulimit -f) a write fails with EFBIG, reported like a full disk,
  // instead of the process being killed with its outputs half-written.
  std::signal(SIGXFSZ, SIG_IGN);
  // A reader that closed its pipe (`streamdet run -d - | head -1`) makes a write fail with EPIPE,
  // an output that closed: the other outputs are finished and the run ends with exit 5 and one
  // line, instead of the whole process being killed (exit 141) with temporary files left behind.
  std::signal(SIGPIPE, SIG_IGN);
}

bool interrupt_requested() { return g_signals.load(std::memory_order_relaxed) > 0; }
void request_interrupt() { g_signals.fetch_add(1); }
void clear_interrupt() { g_signals = 0; }

}  // namespace sd
