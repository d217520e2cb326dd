#include "runtime/interrupt.h"

#include <csignal>
#include <unistd.h>

#include <atomic>

#include "core/unfinished_files.h"

namespace sd {
namespace {
std::atomic<int> g_signals{0};

// The first signal asks the pipeline to stop reading, drain and finalize. A second one ends the
// process at once: the whole-file outputs still under their temporary names are removed (so
// their final names hold nothing, or an earlier complete file), and the JSON Lines hold whole
// lines (each is written in one write()).
void on_signal(int) {
  if (g_signals.fetch_add(1) >= 1) {
    remove_unfinished_files();
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
