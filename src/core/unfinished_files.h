// Files that are being written under a temporary name and must not outlive the process if it is
// ended by a signal before they are finished (a second Ctrl-C). The table is fixed-size and
// lock-free, so that a signal handler may walk it: remove_unfinished_files() only calls unlink(),
// which is async-signal-safe.
#pragma once

namespace sd {

inline constexpr int kMaxUnfinishedFiles = 64;
inline constexpr int kMaxUnfinishedPath = 4096;

// Registers a path; returns its slot, or -1 when the table is full or the path too long (the file
// is then simply not removed by a second signal; every normal path still removes it).
int register_unfinished_file(const char* path);
void unregister_unfinished_file(int slot);
// For the signal handler: unlink() every registered path.
void remove_unfinished_files();

}  // namespace sd
