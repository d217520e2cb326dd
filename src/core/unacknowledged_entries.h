// Entries this process read from sources that acknowledge what they finish (Redis consumer
// groups) and has not acknowledged yet: what a second Ctrl-C, which ends the process at once,
// leaves pending for another worker. Lock-free, so that the signal handler may read it.
#pragma once

#include <cstdint>

namespace sd {

// A source that acknowledges entries exists in this process: a second Ctrl-C says how many it
// leaves pending.
void track_unacknowledged_entries();
// Entries read (+) or acknowledged (-).
void add_unacknowledged_entries(int64_t delta);

// For the signal handler (async-signal-safe).
bool unacknowledged_entries_tracked();
int64_t unacknowledged_entries();

}  // namespace sd
