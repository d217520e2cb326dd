#include "sources/nvdec_packet_decoder.h"

#include <cstring>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavutil/pixdesc.h>
}

namespace sd {

using native::cuda::NvdecCodec;

const char* video_decode_name(VideoDecode d) {
  switch (d) {
    case VideoDecode::kAuto: return "auto";
    case VideoDecode::kCpu: return "cpu";
    case VideoDecode::kNvdec: return "nvdec";
  }
  return "?";
}

namespace {
std::string av_error_text(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, buf, sizeof buf);
  return buf;
}
}  // namespace

Result<NvdecCodec> nvdec_codec_for(const AVCodecParameters& par) {
  NvdecCodec codec;
  if (par.codec_id == AV_CODEC_ID_H264)
    codec = NvdecCodec::kH264;
  else if (par.codec_id == AV_CODEC_ID_HEVC)
    codec = NvdecCodec::kHevc;
  else
    return fail(ErrorCode::kUnsupported, std::string("NVDEC decodes H.264 and HEVC here; this video is ") + avcodec_get_name(par.codec_id));
  // 8-bit 4:2:0 only (NV12); a format the demuxer does not know yet is left to the decoder to say.
  const auto fmt = static_cast<AVPixelFormat>(par.format);
  if (fmt != AV_PIX_FMT_NONE && fmt != AV_PIX_FMT_YUV420P && fmt != AV_PIX_FMT_YUVJ420P) {
    const char* name = av_get_pix_fmt_name(fmt);
    return fail(ErrorCode::kUnsupported, std::string("NVDEC decodes 8-bit 4:2:0 here; this ") + native::cuda::nvdec_codec_name(codec) +
                                             " video is " + (name ? name : "another pixel format"));
  }
  return codec;
}

void AnnexBFilter::BsfFreer::operator()(AVBSFContext* b) const { av_bsf_free(&b); }
void AnnexBFilter::PacketFreer::operator()(AVPacket* p) const { av_packet_free(&p); }
AnnexBFilter::~AnnexBFilter() = default;

Result<AnnexBFilter> AnnexBFilter::open(const AVCodecParameters& par) {
  const char* filter_name = par.codec_id == AV_CODEC_ID_H264   ? "h264_mp4toannexb"
                            : par.codec_id == AV_CODEC_ID_HEVC ? "hevc_mp4toannexb"
                                                               : nullptr;
  if (!filter_name) return fail(ErrorCode::kUnsupported, std::string("no Annex-B filter for ") + avcodec_get_name(par.codec_id));
  const AVBitStreamFilter* filter = av_bsf_get_by_name(filter_name);
  if (!filter) return fail(ErrorCode::kUnsupported, std::string("this FFmpeg has no ") + filter_name + " bitstream filter");
  AnnexBFilter f;
  AVBSFContext* bsf = nullptr;
  if (int r = av_bsf_alloc(filter, &bsf); r < 0) return fail(ErrorCode::kInternal, std::string(filter_name) + ": " + av_error_text(r));
  f.bsf_.reset(bsf);
  if (int r = avcodec_parameters_copy(bsf->par_in, &par); r < 0) return fail(ErrorCode::kInternal, std::string(filter_name) + ": " + av_error_text(r));
  if (int r = av_bsf_init(bsf); r < 0)
    return fail(ErrorCode::kSource, std::string("cannot start the ") + filter_name + " bitstream filter (" + av_error_text(r) + ")");
  f.out_.reset(av_packet_alloc());
  if (!f.out_) return fail(ErrorCode::kInternal, "out of memory");
  return f;
}

Status AnnexBFilter::send(const AVPacket* packet) {
  if (!packet) {
    av_bsf_send_packet(bsf_.get(), nullptr);
    return ok();
  }
  AVPacket* copy = av_packet_clone(packet);  // the filter takes its packet's reference
  if (!copy) return fail(ErrorCode::kInternal, "out of memory");
  if (copy->pts == AV_NOPTS_VALUE) copy->pts = copy->dts != AV_NOPTS_VALUE ? copy->dts : next_pts_;
  next_pts_ = copy->pts + 1;
  const int r = av_bsf_send_packet(bsf_.get(), copy);
  av_packet_free(&copy);
  if (r < 0) return fail(ErrorCode::kCorruptFrame, std::string("the Annex-B filter refused a packet (") + av_error_text(r) + ")");
  return ok();
}

Result<const AVPacket*> AnnexBFilter::take() {
  av_packet_unref(out_.get());
  const int r = av_bsf_receive_packet(bsf_.get(), out_.get());
  if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return nullptr;
  if (r < 0) return fail(ErrorCode::kCorruptFrame, std::string("the Annex-B filter failed on a packet (") + av_error_text(r) + ")");
  return out_.get();
}

Result<std::unique_ptr<NvdecPacketDecoder>> NvdecPacketDecoder::open(const AVCodecParameters& par, int device) {
  SD_ASSIGN_OR_RETURN(const NvdecCodec codec, nvdec_codec_for(par));
  SD_ASSIGN_OR_RETURN(AnnexBFilter filter, AnnexBFilter::open(par));
  std::unique_ptr<NvdecPacketDecoder> d(new NvdecPacketDecoder(std::move(filter), device));
  SD_ASSIGN_OR_RETURN(d->decoder_, native::cuda::NvdecDecoder::create(codec, device));
  return d;
}

Status NvdecPacketDecoder::send(const AVPacket* packet) {
  SD_TRY(filter_.send(packet));
  SD_TRY(decode_filtered());
  return packet ? ok() : decoder_->flush();
}

Status NvdecPacketDecoder::decode_filtered() {
  while (true) {
    SD_ASSIGN_OR_RETURN(const AVPacket* p, filter_.take());
    if (!p) return ok();
    SD_TRY(decoder_->decode(p->data, static_cast<size_t>(p->size), p->pts));
  }
}

Result<bool> NvdecPacketDecoder::receive(Frame& frame, int64_t& pts) {
  std::optional<native::cuda::NvdecFrame> f = decoder_->next();
  if (!f) return false;
  pts = f->pts();
  if (on_device_) {
    frame.device = f->handle();  // shared: the buffer goes back when the pipeline lets go of the frame
    frame.format = PixelFormat::kDeviceNv12;
    return true;
  }
  frame.device.reset();
  const int w = f->width(), h = f->height();
  nv12_.resize(static_cast<size_t>(w) * h * 3 / 2);
  SD_TRY(f->download_nv12(nv12_.data(), w));
  nv12_to_i420(nv12_.data(), w, w, h, frame.yuv);
  frame.format = PixelFormat::kI420;
  return true;
}

}  // namespace sd
