// A video stream's packets decoded by NVDEC (engine/native/cuda/nvdec_decoder.h) instead of
// libavcodec, for FfmpegVideoSource under --decode auto|nvdec: FFmpeg demuxes on the host, the
// h264_mp4toannexb / hevc_mp4toannexb bitstream filter turns MP4/MKV packets (length-prefixed NAL
// units, parameter sets in the extradata) into the Annex-B stream NVDEC's parser reads (a stream
// that is Annex-B already, MPEG-TS or RTSP, passes through unchanged), and the frames come back
// as NV12 in device memory. receive() downloads each frame and hands it over as I420 like the CPU
// decoder's, unless keep_on_device() was called (the run letterboxes on the same GPU): then the
// frame is handed over as it is, in device memory (Frame::device, kDeviceNv12), and nothing is
// copied to the host unless a stage asks (Frame::to_host). docs/gpu.md, "NVDEC".
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/frame.h"
#include "sources/source.h"
#include "engine/native/cuda/nvdec_decoder.h"

struct AVCodecParameters;
struct AVPacket;
struct AVBSFContext;

namespace sd {

const char* video_decode_name(VideoDecode d);  // "auto", "cpu", "nvdec"

// The codec NVDEC would decode this stream as, or the one line saying why it would not (not
// H.264/HEVC, not 8-bit 4:2:0). Needs no GPU: what --decode auto decides first.
Result<native::cuda::NvdecCodec> nvdec_codec_for(const AVCodecParameters& par);

// A demuxer's H.264/HEVC packets as Annex-B (start codes, parameter sets in band before each
// keyframe): FFmpeg's h264_mp4toannexb / hevc_mp4toannexb. Move-only.
class AnnexBFilter {
 public:
  static Result<AnnexBFilter> open(const AVCodecParameters& par);
  AnnexBFilter(AnnexBFilter&&) noexcept = default;
  AnnexBFilter& operator=(AnnexBFilter&&) noexcept = default;
  ~AnnexBFilter();
  // One packet in (null: the end); then take() the filtered ones until it returns null. A taken
  // packet is valid until the next call.
  Status send(const AVPacket* packet);
  Result<const AVPacket*> take();

 private:
  AnnexBFilter() = default;
  struct BsfFreer {
    void operator()(AVBSFContext* b) const;
  };
  struct PacketFreer {
    void operator()(AVPacket* p) const;
  };
  std::unique_ptr<AVBSFContext, BsfFreer> bsf_;
  std::unique_ptr<AVPacket, PacketFreer> out_;
  int64_t next_pts_ = 0;  // for packets without one
};

class NvdecPacketDecoder {
 public:
  // For the stream `par` describes (its codec and extradata): the bitstream filter and the GPU
  // decoder. Errors: the codec or format is not one NVDEC path takes, NVDEC is missing
  // (kUnsupported, the reason in one line), or the filter cannot start.
  static Result<std::unique_ptr<NvdecPacketDecoder>> open(const AVCodecParameters& par, int device = 0);

  // One demuxed packet (its pts in the stream's time base); null: the end of the stream.
  Status send(const AVPacket* packet);
  // The next frame in display order into `frame` (as I420, or kDeviceNv12 after keep_on_device();
  // its pts in `pts`); false when none is ready yet.
  Result<bool> receive(Frame& frame, int64_t& pts);
  // From now on receive() hands frames over in device memory.
  void keep_on_device() { on_device_ = true; }
  bool on_device() const { return on_device_; }
  int device() const { return device_; }
  // The same without leaving the GPU: the NV12 device frame itself.
  std::optional<native::cuda::NvdecFrame> next_device_frame() { return decoder_->next(); }

  std::string describe() const { return decoder_->describe(); }
  int64_t damaged_pictures() const { return decoder_->damaged_pictures(); }

 private:
  NvdecPacketDecoder(AnnexBFilter filter, int device) : filter_(std::move(filter)), device_(device) {}
  Status decode_filtered();

  AnnexBFilter filter_;
  std::unique_ptr<native::cuda::NvdecDecoder> decoder_;
  std::vector<uint8_t> nv12_;  // the downloaded frame, reused
  int device_ = 0;
  bool on_device_ = false;
};

// nv12_to_i420: core/frame.h.

}  // namespace sd
