// A whole-file output (annotated video, profile JSON, trace) written under a temporary name beside
// its target and renamed onto it only when complete: a failed or interrupted run never leaves a
// truncated file under the final name, nor replaces a good earlier file with a broken one.
// Created before the first frame, so an unwritable path fails early and leaves nothing behind.
#pragma once

#include <string>

#include "core/error.h"

namespace sd {

class AtomicFile {
 public:
  // Creates the (empty) temporary file `.<name>.streamdet-<pid>.tmp` in the target's folder.
  // `what` names the output in errors ("video", "profile", "trace").
  static Result<AtomicFile> create(const std::string& target, const std::string& what);
  AtomicFile() = default;
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // removes the temporary file unless committed

  const std::string& target() const { return target_; }
  const std::string& temp_path() const { return temp_; }
  // Flushes the temporary file to disk and renames it onto the target.
  Status commit();
  // Removes the temporary file now (a failed output).
  void discard();

 private:
  std::string target_, temp_, what_;
  int slot_ = -1;  // in core/unfinished_files.h's table
};

}  // namespace sd
