// Video files through FFmpeg's libavformat/libavcodec directly. OpenCV's capture converts every
// decoded frame to BGR (0.65 ms at 720p); this source hands 4:2:0 frames over as the decoder made
// them (I420), and the letterbox converts only the pixels the network sees. Other pixel formats
// are converted to BGR with libswscale, as OpenCV does.
#pragma once

#include <memory>

#include "sources/source.h"

namespace sd {

struct FfmpegState;  // libav contexts (RAII), defined in the .cpp

class FfmpegVideoSource final : public Source {
 public:
  static Result<std::unique_ptr<Source>> open(const std::string& path, const SourceOptions& options);
  ~FfmpegVideoSource() override;
  const SourceInfo& info() const override { return info_; }
  Result<bool> read(Frame& frame) override;

 private:
  FfmpegVideoSource();
  Result<bool> deliver(Frame& frame);
  Result<bool> undecodable(Frame& frame, int averror);

  std::unique_ptr<FfmpegState> av_;
  SourceInfo info_;
  int source_id_ = 0;
  int64_t next_index_ = 0;
  int consecutive_failures_ = 0;
  bool draining_ = false;  // the demuxer is at its end; the decoder is being flushed
};

}  // namespace sd
