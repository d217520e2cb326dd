// Video files and network streams (RTSP, RTMP, SRT, HTTP, TCP/UDP) through FFmpeg's
// libavformat/libavcodec directly. OpenCV's capture converts every
// decoded frame to BGR (0.65 ms at 720p); this source hands 4:2:0 frames over as the decoder made
// them (I420), and the letterbox converts only the pixels the network sees. Other pixel formats
// are converted to BGR with libswscale, as OpenCV does. A stream's every blocking call is cut short
// (FFmpeg's interrupt callback) when the run stops, and a read when no frame came for the stall
// timeout: a dead stream never blocks the reader (sources/supervised_source.h reconnects it).
#pragma once

#include <memory>

#include "sources/source.h"

struct AVCodecParameters;  // libavcodec

namespace sd {

struct FfmpegState;  // libav contexts (RAII), defined in the .cpp

class FfmpegVideoSource final : public Source {
 public:
  static Result<std::unique_ptr<Source>> open(const std::string& path, const SourceOptions& options);
  static Result<std::unique_ptr<Source>> open_stream(const std::string& url, const SourceOptions& options);
  ~FfmpegVideoSource() override;
  const SourceInfo& info() const override { return info_; }
  Result<bool> read(Frame& frame) override;
  std::optional<std::string> damage() const override;
  int64_t damaged_frames() const override { return stream_ ? 0 : corrupt_packets_; }  // a file's, as damage() says
  bool keep_frames_on_device(int cuda_device, std::string& why_not) override;

 private:
  FfmpegVideoSource();
  static Result<std::unique_ptr<Source>> open_input(const std::string& path, const SourceOptions& options, bool network);
  std::optional<std::string> stream_damage() const;
  Result<bool> deliver(Frame& frame);
  Result<bool> finish(Frame& frame, int64_t pts);
  Status choose_decoder(const AVCodecParameters& par, VideoDecode decode);
  Result<bool> nvdec_failed(Frame& frame, const Error& e);
  Result<bool> undecodable(Frame& frame, int averror);

  std::unique_ptr<FfmpegState> av_;
  SourceInfo info_;
  int source_id_ = 0;
  int64_t next_index_ = 0;
  int consecutive_failures_ = 0;
  bool draining_ = false;  // the demuxer is at its end; the decoder is being flushed
  // What went wrong on the way (damage()).
  int64_t undecodable_ = 0;      // frames the decoder could not make
  int64_t corrupt_packets_ = 0;  // packets the demuxer flagged as corrupt (a cut-off last packet)
  std::string read_error_;       // why reading stopped, when it was not the end of the file
  int64_t stopped_at_ = -1, file_size_ = -1;  // bytes, when the data ended
  bool stream_ = false;          // a network stream, not a file
  double stall_timeout_ms_ = 0;  // a stream's read gives up after this without a frame
  Clock::time_point start_{};    // a stream's frames are timed from its opening
  bool mpegts_ = false;          // a transport stream: 188- or 192-byte packets to its last byte
};

}  // namespace sd
