#include "runtime/interrupt.h"

#include <csignal>
#include <unistd.h>

#include <atomic>

namespace sd {
namespace {
std::atomic<int> g_signals{0};

void on_signal(int) {
  if (g_signals.fetch_add(1) >= 1) _exit(130);  // second Ctrl-C: the user means it
}
}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupt_requested() { return g_signals.load(std::memory_order_relaxed) > 0; }
void request_interrupt() { g_signals.fetch_add(1); }
void clear_interrupt() { g_signals = 0; }

}  // namespace sd
