#include "sinks/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/unfinished_files.h"

namespace sd {

Result<AtomicFile> AtomicFile::create(const std::string& target, const std::string& what) {
  namespace fs = std::filesystem;
  const fs::path t(target);
  if (t.filename().empty() || target.back() == '/')
    return fail(ErrorCode::kOutput, "cannot write " + what + " to " + target + ": not a file name");
  std::error_code ec;
  if (fs::is_directory(t, ec)) return fail(ErrorCode::kOutput, "cannot write " + what + " to " + target + ": it is a folder");
  AtomicFile f;
  f.target_ = target;
  f.what_ = what;
  f.temp_ = (t.parent_path() / ("." + t.filename().string() + ".streamdet-" + std::to_string(::getpid()) + ".tmp")).string();
  int fd = ::open(f.temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    f.temp_.clear();
    return fail(ErrorCode::kOutput, "cannot write " + what + " to " + target + ": " + std::strerror(err));
  }
  ::close(fd);
  f.slot_ = register_unfinished_file(f.temp_.c_str());
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept { *this = std::move(other); }

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    discard();
    target_ = std::move(other.target_);
    temp_ = std::move(other.temp_);
    what_ = std::move(other.what_);
    slot_ = std::exchange(other.slot_, -1);
    other.temp_.clear();
  }
  return *this;
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (temp_.empty()) return;
  ::unlink(temp_.c_str());
  unregister_unfinished_file(std::exchange(slot_, -1));
  temp_.clear();
}

Status AtomicFile::commit() {
  if (temp_.empty()) return fail(ErrorCode::kOutput, what_ + " " + target_ + " was already finished or discarded");
  // On a full disk, what the page cache accepted may still fail here: fsync says so.
  int fd = ::open(temp_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    discard();
    return fail(ErrorCode::kOutput, "writing " + what_ + " " + target_ + " failed: " + std::strerror(err));
  }
  ::close(fd);
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    discard();
    return fail(ErrorCode::kOutput, "cannot put " + what_ + " in place at " + target_ + ": " + std::strerror(err));
  }
  unregister_unfinished_file(std::exchange(slot_, -1));
  temp_.clear();
  return ok();
}

}  // namespace sd
