// A frame as it travels through the pipeline: the decoded image plus where and when it came from.
#pragma once

#include <chrono>
#include <cstdint>

#include <opencv2/core/mat.hpp>

namespace sd {

using Clock = std::chrono::steady_clock;

struct Frame {
  cv::Mat image;              // BGR, 8-bit, 3 channels
  int source_id = 0;          // index of the source in the run (several sources in one process)
  int64_t index = 0;          // 0-based position in the source (counts skipped corrupt frames too)
  double timestamp_ms = 0;    // position in the stream (file) or time since start (live)
  Clock::time_point capture_time{};  // when the pipeline got it from the source
};

}  // namespace sd
