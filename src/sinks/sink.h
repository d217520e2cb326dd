// Sinks receive processed frames in order: annotated video, JSONL detections, ...
#pragma once

#include <string>

#include "core/detection.h"
#include "core/error.h"
#include "core/frame.h"

namespace sd {

struct FrameResult {
  Frame frame;             // the original frame (sinks that draw get an annotated copy)
  Detections detections;   // original-frame pixels
};

class Sink {
 public:
  virtual ~Sink() = default;
  virtual std::string name() const = 0;
  virtual Status write(const FrameResult& result) = 0;
  // Flushes and closes; called once, also on Ctrl-C and on errors, so partial output is kept.
  virtual Status finish() = 0;
};

}  // namespace sd
