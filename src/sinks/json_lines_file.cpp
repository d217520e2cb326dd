#include "sinks/json_lines_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace sd {

Result<std::unique_ptr<JsonLinesFile>> JsonLinesFile::open(const std::string& path, const std::string& what) {
  SD_ASSIGN_OR_RETURN(OutputPlace place, place_output(path, what, /*stdout_allowed=*/true));
  if (place.placement == OutputPlacement::kReplace) {
    // Written in place (followed while it grows), not by rename: check it can be opened for
    // writing without truncating it, or that its folder takes a new file.
    const std::string folder = std::filesystem::path(place.path).parent_path().string();
    struct stat st {};
    const bool exists = ::stat(path.c_str(), &st) == 0;
    const int fd = exists ? ::open(path.c_str(), O_WRONLY | O_CLOEXEC) : -1;
    if (exists ? fd < 0 : ::access(folder.empty() ? "." : folder.c_str(), W_OK | X_OK) != 0)
      return fail(ErrorCode::kOutput, "cannot write " + what + " to " + path + ": " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
  }
  auto file = std::unique_ptr<JsonLinesFile>(new JsonLinesFile());
  file->path_ = path;
  file->shown_ = output_display_name(path);
  file->what_ = what;
  file->placement_ = place.placement;
  return file;
}

JsonLinesFile::~JsonLinesFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status JsonLinesFile::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ >= 0) return ok();
  switch (placement_) {
    case OutputPlacement::kStdout: fd_ = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3); break;
    case OutputPlacement::kInPlace: fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC); break;
    case OutputPlacement::kReplace: fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); break;
  }
  if (fd_ < 0 && errno == EINTR)  // Ctrl-C while a FIFO waited for its reader
    return fail(ErrorCode::kInterrupted, "interrupted while " + shown_ + " waited for a reader");
  if (fd_ < 0) return fail(ErrorCode::kOutput, "cannot write " + what_ + " to " + shown_ + ": " + std::strerror(errno));
  return ok();
}

Status JsonLinesFile::append(const std::string& lines) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) return fail(ErrorCode::kOutput, what_ + " file " + shown_ + " is not open");
  size_t done = 0;
  while (done < lines.size()) {
    const ssize_t n = ::write(fd_, lines.data() + done, lines.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      // No torn last line in a file (a pipe or a device has nothing to cut back).
      if (placement_ == OutputPlacement::kReplace && ::ftruncate(fd_, bytes_) == 0) ::lseek(fd_, bytes_, SEEK_SET);
      // A reader that went away (`-d - | head -1`) is an output that closed, not a crash:
      // SIGPIPE is ignored (runtime/interrupt.cpp) and the run ends with this line.
      if (err == EPIPE) return fail(ErrorCode::kOutput, "writing " + what_ + " to " + shown_ + " failed: its reader closed the pipe");
      return fail(ErrorCode::kOutput, "writing " + what_ + " to " + shown_ + " failed: " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  bytes_ += static_cast<int64_t>(lines.size());
  return ok();
}

Status JsonLinesFile::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) return ok();
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) return fail(ErrorCode::kOutput, "closing " + what_ + " file " + shown_ + " failed: " + std::strerror(errno));
  return ok();
}

}  // namespace sd
