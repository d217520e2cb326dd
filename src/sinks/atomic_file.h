// A whole-file output (annotated video, profile JSON, trace, report) written under a temporary
// name beside its target and renamed onto it only when complete: a failed or interrupted run never
// leaves a truncated file under the final name, nor replaces a good earlier file with a broken one.
// A target that is a symbolic link has its link target replaced; a character device or a FIFO is
// written into in place, never renamed over (sinks/output_place.h).
// Created before the first frame, so an unwritable path fails early and leaves nothing behind.
#pragma once

#include <string>

#include "core/error.h"

namespace sd {

class AtomicFile {
 public:
  // Creates the (empty) temporary file `.<name>.streamdet-<pid>.tmp` in the target's folder (the
  // link target's folder for a link); for a device or a FIFO, checks that it can be written.
  // `what` names the output in errors ("video", "profile", "trace").
  static Result<AtomicFile> create(const std::string& target, const std::string& what);
  AtomicFile() = default;
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // removes the temporary file unless committed

  const std::string& target() const { return target_; }
  // Where the output is written: the temporary file, or the device or FIFO itself.
  const std::string& write_path() const { return write_path_; }
  // Whether write_path() is the target itself (a device or a FIFO): it cannot seek, nor be renamed.
  bool in_place() const { return in_place_; }
  // Flushes the temporary file to disk and renames it onto the target (nothing for in place).
  Status commit();
  // Removes the temporary file now (a failed output).
  void discard();

 private:
  std::string target_, write_path_, what_;
  std::string final_path_;  // the file renamed onto: the target, or the target of its link
  bool in_place_ = false;
  int slot_ = -1;  // in core/unfinished_files.h's table
};

}  // namespace sd
