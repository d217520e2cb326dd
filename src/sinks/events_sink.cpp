#include "sinks/events_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "sinks/jsonl_sink.h"

namespace sd {

Result<std::unique_ptr<EventsSink>> EventsSink::open(const std::string& path, const std::vector<std::string>& source_uris) {
  SD_ASSIGN_OR_RETURN(OutputPlace place, place_output(path, "events", /*stdout_allowed=*/true));
  if (place.placement == OutputPlacement::kReplace) {
    // As the detections file: checked now without truncating it, created by start().
    const std::string folder = std::filesystem::path(place.path).parent_path().string();
    struct stat st {};
    const bool exists = ::stat(path.c_str(), &st) == 0;
    const int fd = exists ? ::open(path.c_str(), O_WRONLY | O_CLOEXEC) : -1;
    if (exists ? fd < 0 : ::access(folder.empty() ? "." : folder.c_str(), W_OK | X_OK) != 0)
      return fail(ErrorCode::kOutput, "cannot write events to " + path + ": " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
  }
  auto sink = std::unique_ptr<EventsSink>(new EventsSink());
  sink->path_ = path;
  sink->shown_ = output_display_name(path);
  sink->placement_ = place.placement;
  for (const auto& u : source_uris) sink->sources_json_.push_back(json_quote(u));
  return sink;
}

EventsSink::~EventsSink() {
  if (fd_ >= 0) ::close(fd_);
}

Status EventsSink::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ >= 0) return ok();
  switch (placement_) {
    case OutputPlacement::kStdout: fd_ = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3); break;
    case OutputPlacement::kInPlace: fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC); break;
    case OutputPlacement::kReplace: fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); break;
  }
  if (fd_ < 0 && errno == EINTR) return fail(ErrorCode::kInterrupted, "interrupted while " + shown_ + " waited for a reader");
  if (fd_ < 0) return fail(ErrorCode::kOutput, "cannot write events to " + shown_ + ": " + std::strerror(errno));
  return ok();
}

Status EventsSink::write(const FrameResult& result) {
  if (result.events.empty()) return ok();
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) return fail(ErrorCode::kOutput, "events file " + shown_ + " is not open");
  lines_.clear();
  for (const CountEvent& e : result.events) {
    const int sid = e.source_id;
    const std::string source = !result.frame.source_name.empty() ? json_quote(result.frame.source_name)
                               : sid >= 0 && static_cast<size_t>(sid) < sources_json_.size()
                                   ? sources_json_[static_cast<size_t>(sid)]
                                   : "\"" + std::to_string(sid) + "\"";
    lines_ += count_event_json(e, source);
    lines_ += '\n';
  }
  size_t done = 0;
  while (done < lines_.size()) {
    const ssize_t n = ::write(fd_, lines_.data() + done, lines_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      if (placement_ == OutputPlacement::kReplace && ::ftruncate(fd_, bytes_) == 0) ::lseek(fd_, bytes_, SEEK_SET);
      if (err == EPIPE) return fail(ErrorCode::kOutput, "writing events to " + shown_ + " failed: its reader closed the pipe");
      return fail(ErrorCode::kOutput, "writing events to " + shown_ + " failed: " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  bytes_ += static_cast<int64_t>(lines_.size());
  return ok();
}

Status EventsSink::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) return ok();
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) return fail(ErrorCode::kOutput, "closing events file " + shown_ + " failed: " + std::strerror(errno));
  return ok();
}

}  // namespace sd
