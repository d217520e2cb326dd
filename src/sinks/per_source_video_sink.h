// One annotated video per source behind one sink: `-o out.mp4` with several sources writes
// out_0.mp4, out_1.mp4, ... (sinks/output_paths.h), each frame to its own source's file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sinks/sink.h"
#include "sinks/video_sink.h"

namespace sd {

struct SinkSourceInfo;

class PerSourceVideoSink final : public Sink {
 public:
  // Opens every file now (a bad path fails before the first frame; what was opened is removed).
  static Result<std::unique_ptr<PerSourceVideoSink>> open(const std::string& pattern,
                                                          const std::vector<SinkSourceInfo>& sources);
  std::string name() const override { return "video " + pattern_; }
  bool wants_drawn_frame() const override { return true; }
  // Each source's frames go to its own file, written by that source's thread alone: no lock.
  Status write(const FrameResult& result) override;
  Status finish() override;

 private:
  std::string pattern_;
  std::vector<std::unique_ptr<VideoSink>> videos_;  // by source id
};

}  // namespace sd
