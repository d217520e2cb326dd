#include "sinks/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/unfinished_files.h"
#include "sinks/output_place.h"

namespace sd {

Result<AtomicFile> AtomicFile::create(const std::string& target, const std::string& what) {
  namespace fs = std::filesystem;
  SD_ASSIGN_OR_RETURN(OutputPlace place, place_output(target, what, /*stdout_allowed=*/false));
  AtomicFile f;
  f.target_ = target;
  f.what_ = what;
  f.final_path_ = place.path;
  if (place.placement == OutputPlacement::kInPlace) {
    f.in_place_ = true;
    f.write_path_ = place.path;
    return f;
  }
  const fs::path t(place.path);
  f.write_path_ = (t.parent_path() / ("." + t.filename().string() + ".streamdet-" + std::to_string(::getpid()) + ".tmp")).string();
  int fd = ::open(f.write_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    f.write_path_.clear();
    return fail(ErrorCode::kOutput, "cannot write " + what + " to " + target + ": " + std::strerror(err));
  }
  ::close(fd);
  f.slot_ = register_unfinished_file(f.write_path_.c_str());
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept { *this = std::move(other); }

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    discard();
    target_ = std::move(other.target_);
    write_path_ = std::move(other.write_path_);
    what_ = std::move(other.what_);
    final_path_ = std::move(other.final_path_);
    in_place_ = other.in_place_;
    slot_ = std::exchange(other.slot_, -1);
    other.write_path_.clear();
  }
  return *this;
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (write_path_.empty()) return;
  if (!in_place_) {  // a device or a FIFO is not ours to remove
    ::unlink(write_path_.c_str());
    unregister_unfinished_file(std::exchange(slot_, -1));
  }
  write_path_.clear();
}

Status AtomicFile::commit() {
  if (write_path_.empty()) return fail(ErrorCode::kOutput, what_ + " " + target_ + " was already finished or discarded");
  if (in_place_) {  // written as it went: a device or a FIFO has nothing to sync or rename
    write_path_.clear();
    return ok();
  }
  // On a full disk, what the page cache accepted may still fail here: fsync says so.
  int fd = ::open(write_path_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    discard();
    return fail(ErrorCode::kOutput, "writing " + what_ + " " + target_ + " failed: " + std::strerror(err));
  }
  ::close(fd);
  if (::rename(write_path_.c_str(), final_path_.c_str()) != 0) {
    const int err = errno;
    discard();
    return fail(ErrorCode::kOutput, "cannot put " + what_ + " in place at " + target_ + ": " + std::strerror(err));
  }
  unregister_unfinished_file(std::exchange(slot_, -1));
  write_path_.clear();
  return ok();
}

}  // namespace sd
