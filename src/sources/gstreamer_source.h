// A GStreamer pipeline ending in appsink, driven through GStreamer's own API (not OpenCV's
// capture, which hangs for a minute and more on a pipeline that parses but never starts and
// prints GStreamer's messages over many lines): parsed with gst_parse_launch, started with a 2 s
// limit, its bus read on every frame so that an error later in the stream ends the run with
// GStreamer's message on one line.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "sources/source.h"

namespace sd {

struct GstState;  // gstreamer_source.cpp

class GStreamerSource final : public Source {
 public:
  static Result<std::unique_ptr<Source>> open(const std::string& pipeline, const SourceOptions& options);
  ~GStreamerSource() override;
  const SourceInfo& info() const override { return info_; }
  Result<bool> read(Frame& frame) override;

 private:
  GStreamerSource();
  std::unique_ptr<GstState> gst_;
  SourceInfo info_;
  int source_id_ = 0;
  std::function<bool()> should_stop_;
  double stall_timeout_ms_ = 0;  // a read gives up after this long without a frame
  int64_t next_index_ = 0;
  Clock::time_point start_;
};

}  // namespace sd
