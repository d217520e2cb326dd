#include "sinks/jsonl_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace sd {

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

namespace {

void append_fixed(std::string& out, double v, int precision) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, precision);
  out.append(buf, res.ptr);
}

void append_int(std::string& out, long long v) {
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

}  // namespace

Result<std::unique_ptr<JsonlSink>> JsonlSink::open(const std::string& path, const std::vector<std::string>& source_uris,
                                                   const std::vector<std::string>& class_names) {
  SD_ASSIGN_OR_RETURN(OutputPlace place, place_output(path, "detections", /*stdout_allowed=*/true));
  if (place.placement == OutputPlacement::kReplace) {
    // Written in place (followed while it grows), not by rename: check it can be opened for
    // writing without truncating it, or that its folder takes a new file.
    const std::string folder = std::filesystem::path(place.path).parent_path().string();
    struct stat st {};
    const bool exists = ::stat(path.c_str(), &st) == 0;
    const int fd = exists ? ::open(path.c_str(), O_WRONLY | O_CLOEXEC) : -1;
    if (exists ? fd < 0 : ::access(folder.empty() ? "." : folder.c_str(), W_OK | X_OK) != 0)
      return fail(ErrorCode::kOutput, "cannot write detections to " + path + ": " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
  }
  auto sink = std::unique_ptr<JsonlSink>(new JsonlSink());
  sink->path_ = path;
  sink->shown_ = output_display_name(path);
  sink->placement_ = place.placement;
  for (const auto& u : source_uris) sink->sources_json_.push_back(json_quote(u));
  for (const auto& n : class_names) sink->names_json_.push_back(json_quote(n));
  return sink;
}

Status JsonlSink::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ >= 0) return ok();
  switch (placement_) {
    case OutputPlacement::kStdout: fd_ = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3); break;
    case OutputPlacement::kInPlace: fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC); break;
    case OutputPlacement::kReplace: fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); break;
  }
  if (fd_ < 0 && errno == EINTR)  // Ctrl-C while a FIFO waited for its reader
    return fail(ErrorCode::kInterrupted, "interrupted while " + shown_ + " waited for a reader");
  if (fd_ < 0) return fail(ErrorCode::kOutput, "cannot write detections to " + shown_ + ": " + std::strerror(errno));
  return ok();
}

JsonlSink::~JsonlSink() {
  if (fd_ >= 0) ::close(fd_);
}

void JsonlSink::format_line(const FrameResult& result, std::string& out) const {
  out.clear();
  out += "{\"source\": ";
  const int sid = result.frame.source_id;
  // A frame from the wire (Redis) is named as its producer named it.
  if (!result.frame.source_name.empty()) out += json_quote(result.frame.source_name);
  else if (sid >= 0 && static_cast<size_t>(sid) < sources_json_.size()) out += sources_json_[static_cast<size_t>(sid)];
  else out += "\"" + std::to_string(sid) + "\"";
  out += ", \"frame\": ";
  append_int(out, result.frame.index);
  out += ", \"timestamp_ms\": ";
  append_fixed(out, result.frame.timestamp_ms, 1);
  out += ", \"detections\": [";
  bool first = true;
  for (const Detection& d : result.detections) {
    if (!first) out += ", ";
    first = false;
    out += "{\"box\": [";
    append_fixed(out, d.x1, 1);
    out += ", ";
    append_fixed(out, d.y1, 1);
    out += ", ";
    append_fixed(out, d.x2, 1);
    out += ", ";
    append_fixed(out, d.y2, 1);
    out += "], \"class_id\": ";
    append_int(out, d.class_id);
    out += ", \"class_name\": ";
    if (d.class_id >= 0 && static_cast<size_t>(d.class_id) < names_json_.size())
      out += names_json_[static_cast<size_t>(d.class_id)];
    else
      out += "\"" + std::to_string(d.class_id) + "\"";
    out += ", \"confidence\": ";
    append_fixed(out, d.score, 4);
    if (d.track_id >= 0) {
      out += ", \"track_id\": ";
      out += std::to_string(d.track_id);
    }
    out += "}";
  }
  out += "]}";
}

Status JsonlSink::write(const FrameResult& result) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) return fail(ErrorCode::kOutput, "detections file " + shown_ + " is not open");
  format_line(result, line_);
  line_ += '\n';
  size_t done = 0;
  while (done < line_.size()) {
    const ssize_t n = ::write(fd_, line_.data() + done, line_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      // No torn last line in a file (a pipe or a device has nothing to cut back).
      if (placement_ == OutputPlacement::kReplace && ::ftruncate(fd_, bytes_) == 0) ::lseek(fd_, bytes_, SEEK_SET);
      // A reader that went away (`-d - | head -1`) is an output that closed, not a crash:
      // SIGPIPE is ignored (runtime/interrupt.cpp) and the run ends with this line.
      if (err == EPIPE)
        return fail(ErrorCode::kOutput, "writing detections to " + shown_ + " failed: its reader closed the pipe");
      return fail(ErrorCode::kOutput, "writing detections to " + shown_ + " failed: " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  bytes_ += static_cast<int64_t>(line_.size());
  return ok();
}

Status JsonlSink::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) return ok();
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) return fail(ErrorCode::kOutput, "closing detections file " + shown_ + " failed: " + std::strerror(errno));
  return ok();
}

}  // namespace sd
