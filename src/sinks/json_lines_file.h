// A JSON Lines output file as streamdet writes them (the detections of -d, the events of
// --events): checked at open without being touched (an unwritable path fails before processing
// starts), created or truncated by start() (after everything that can refuse the run), written in
// place one batch of whole lines per write(2) (no stdio buffer), so that it can be followed while
// the run goes on and holds only complete lines at every moment, even after kill -9; a write that
// fails part-way (a full disk) is cut back to the last whole line. `-` is standard output; a
// device or a FIFO is written as it is (a FIFO is opened by start(), which waits for its reader).
// Thread-safe: every source's sink thread appends to the one file.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "core/error.h"
#include "sinks/output_place.h"

namespace sd {

class JsonLinesFile {
 public:
  // `what` names the contents in messages: "detections", "events".
  static Result<std::unique_ptr<JsonLinesFile>> open(const std::string& path, const std::string& what);
  ~JsonLinesFile();
  JsonLinesFile(const JsonLinesFile&) = delete;
  JsonLinesFile& operator=(const JsonLinesFile&) = delete;

  Status start();
  // Whole lines, each ending in '\n'.
  Status append(const std::string& lines);
  Status finish();
  const std::string& path() const { return path_; }

 private:
  JsonLinesFile() = default;
  std::string path_, shown_, what_;  // shown_: the path, or "standard output" for `-`
  OutputPlacement placement_ = OutputPlacement::kReplace;
  std::mutex mutex_;
  int fd_ = -1;
  int64_t bytes_ = 0;  // whole lines written so far
};

}  // namespace sd
