// Detections as JSON Lines, one object per frame (format documented in the README):
// {"source": "...", "frame": 12, "timestamp_ms": 400.0, "detections": [{"box": [x1, y1, x2, y2],
//  "class_id": 2, "class_name": "car", "confidence": 0.91}]}
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sinks/output_place.h"
#include "sinks/sink.h"

namespace sd {

class JsonlSink final : public Sink {
 public:
  // Checks now that the file can be written (an unwritable path fails before processing starts)
  // without touching it; start() creates or truncates it. The file is written in place, one whole
  // line per frame in one write (no stdio buffer), so that it can be followed while the run goes on
  // and holds only complete lines at every moment, even after kill -9; a write that fails
  // part-way (a full disk) is cut back to the last whole line. `-` is standard output; a device
  // or a FIFO is written as it is (a FIFO is opened by start(), which waits for its reader).
  // `source_uris[i]` names the source of frames with source_id i (unless the frame names its
  // producer's source: frame.source_name).
  static Result<std::unique_ptr<JsonlSink>> open(const std::string& path, const std::vector<std::string>& source_uris,
                                                 const std::vector<std::string>& class_names);
  ~JsonlSink() override;
  std::string name() const override { return "jsonl " + path_; }
  Status start() override;
  Status write(const FrameResult& result) override;
  Status finish() override;

  // Formats one frame's line (without the newline) into `out`; exposed for tests.
  void format_line(const FrameResult& result, std::string& out) const;

 private:
  std::string path_;
  std::string shown_;                       // the path, or "standard output" for `-`
  OutputPlacement placement_ = OutputPlacement::kReplace;
  std::mutex mutex_;                        // one file for every source's sink thread
  int fd_ = -1;
  int64_t bytes_ = 0;                       // whole lines written so far
  std::vector<std::string> sources_json_;   // source uris, JSON-escaped and quoted
  std::vector<std::string> names_json_;     // class names, JSON-escaped and quoted
  std::string line_;                        // reused buffer
};

std::string json_quote(const std::string& s);

}  // namespace sd
