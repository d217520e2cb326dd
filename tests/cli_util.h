// Driving the streamdet executable as a user does, for the CLI and robustness tests: spawn it with
// arguments (optionally with a file-size limit, as a full disk), send it signals, read its exit code
// and stderr, and check what it left behind.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "test_util.h"

namespace sd::test {

inline const std::string kTinyModel = std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8.onnx";
// The same weights with dynamic batch, height and width (tools/make_dynamic_model.py).
inline const std::string kTinyDynamicModel = std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8_dynamic.onnx";

struct SpawnOptions {
  std::string stdout_path = "/dev/null";
  // When 0 or more, the child's standard output is this descriptor (a pipe's write end) instead
  // of stdout_path. Make the pipe with O_CLOEXEC, so that the child holds no copy of its read end.
  int stdout_fd = -1;
  // RLIMIT_FSIZE for the child (SIGXFSZ ignored): a write past it fails with EFBIG, as on a
  // full disk, on any machine and without root.
  std::optional<uint64_t> file_size_limit;
  // The child's soft RLIMIT_NOFILE (the hard one unchanged): a machine with a low default.
  std::optional<uint64_t> open_files_soft_limit;
};

struct Process {
  pid_t pid = -1;
  std::string stderr_path;
};

Process spawn_streamdet(const std::vector<std::string>& args, const std::string& stderr_path,
                        const SpawnOptions& options = {});
// The exit status; a process killed by a signal shows as 128 + signal (a crash: 134, 139).
int wait_exit_code(const Process& p);

struct CliResult {
  int code = -1;
  std::string err;
};

CliResult run_cli(const TempDir& dir, const std::vector<std::string>& args, const SpawnOptions& options = {});

// The last non-empty line of stderr: where the one-line error is.
std::string last_line(const std::string& text);
// The lines of stderr that are errors ("streamdet: error: ...") or anything not ours (library noise).
std::vector<std::string> nonempty_lines(const std::string& text);

// Frames a video file decodes to (FFmpeg, every frame read); -1 when it cannot be opened.
int64_t count_video_frames(const std::string& path);

// Every line of a JSON Lines file parses; returns the number of lines, or -1 on a torn/bad line.
int64_t count_valid_jsonl_lines(const std::string& path);

// Files in `dir` (names only), to check that nothing stray (temporaries, 0-byte files) is left.
std::vector<std::string> list_dir(const std::string& dir);

}  // namespace sd::test
