// The progress line on a terminal: frames done / total, fps, ETA. Silent when stderr is not a TTY.
#pragma once

#include <cstdint>

#include "core/frame.h"

namespace sd {

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled);
  ~ProgressLine();
  void update(int64_t done, int64_t total);  // total < 0: unknown
  void finish();                             // clears the line

 private:
  bool enabled_;
  bool printed_ = false;
  Clock::time_point start_, last_;
};

}  // namespace sd
