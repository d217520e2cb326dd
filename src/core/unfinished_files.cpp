#include "core/unfinished_files.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

namespace sd {
namespace {

// state: 0 free, 1 being written (not visible to the handler), 2 registered.
struct Slot {
  std::atomic<int> state{0};
  char path[kMaxUnfinishedPath];
};
Slot g_slots[kMaxUnfinishedFiles];

}  // namespace

int register_unfinished_file(const char* path) {
  const size_t n = std::strlen(path);
  if (n + 1 > static_cast<size_t>(kMaxUnfinishedPath)) return -1;
  for (int i = 0; i < kMaxUnfinishedFiles; ++i) {
    int expected = 0;
    if (!g_slots[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(g_slots[i].path, path, n + 1);
    g_slots[i].state.store(2, std::memory_order_release);
    return i;
  }
  return -1;
}

void unregister_unfinished_file(int slot) {
  if (slot < 0 || slot >= kMaxUnfinishedFiles) return;
  g_slots[slot].state.store(0, std::memory_order_release);
}

void remove_unfinished_files() {
  for (auto& s : g_slots)
    if (s.state.load(std::memory_order_acquire) == 2) ::unlink(s.path);
}

}  // namespace sd
