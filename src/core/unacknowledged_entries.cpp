#include "core/unacknowledged_entries.h"

#include <atomic>

namespace sd {
namespace {
std::atomic<bool> g_tracked{false};
std::atomic<int64_t> g_unacknowledged{0};
static_assert(std::atomic<int64_t>::is_always_lock_free, "read from a signal handler");
}  // namespace

void track_unacknowledged_entries() { g_tracked = true; }
void add_unacknowledged_entries(int64_t delta) { g_unacknowledged.fetch_add(delta, std::memory_order_relaxed); }
bool unacknowledged_entries_tracked() { return g_tracked.load(std::memory_order_relaxed); }
int64_t unacknowledged_entries() { return g_unacknowledged.load(std::memory_order_relaxed); }

}  // namespace sd
