// Detections as JSON Lines, one object per frame (format documented in the README):
// {"source": "...", "frame": 12, "timestamp_ms": 400.0, "detections": [{"box": [x1, y1, x2, y2],
//  "class_id": 2, "class_name": "car", "confidence": 0.91}]}
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sinks/json_lines_file.h"
#include "sinks/sink.h"

namespace sd {

class JsonlSink final : public Sink {
 public:
  // One line per frame, written as sinks/json_lines_file.h says (checked now, created by start(),
  // whole lines only at every moment; `-` is standard output).
  // `source_uris[i]` names the source of frames with source_id i (unless the frame names its
  // producer's source: frame.source_name).
  static Result<std::unique_ptr<JsonlSink>> open(const std::string& path, const std::vector<std::string>& source_uris,
                                                 const std::vector<std::string>& class_names);
  std::string name() const override { return "jsonl " + file_->path(); }
  Status start() override;
  Status write(const FrameResult& result) override;
  Status finish() override;

  // Formats one frame's line (without the newline) into `out`; exposed for tests.
  void format_line(const FrameResult& result, std::string& out) const;

 private:
  std::unique_ptr<JsonLinesFile> file_;
  std::mutex mutex_;                        // line_ is shared by every source's sink thread
  std::vector<std::string> sources_json_;   // source uris, JSON-escaped and quoted
  std::vector<std::string> names_json_;     // class names, JSON-escaped and quoted
  std::string line_;                        // reused buffer
};

std::string json_quote(const std::string& s);

}  // namespace sd
