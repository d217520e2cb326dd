#include "sinks/video_sink.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include <opencv2/imgproc.hpp>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
}

#include "core/ffmpeg_log.h"
#include "core/log.h"
#include "sinks/output_place.h"

namespace sd {

namespace {

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

bool is_video_extension(const std::string& ext) {
  return ext == ".mp4" || ext == ".mov" || ext == ".m4v" || ext == ".mkv" || ext == ".avi";
}

std::string av_error_text(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, buf, sizeof buf);
  return buf;
}

struct CodecFreer {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameFreer {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketFreer {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct SwsFreer {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};
// Closes the file (if open) and frees the muxer.
struct MuxerFreer {
  void operator()(AVFormatContext* f) const {
    if (f->pb && !(f->oformat->flags & AVFMT_NOFILE)) avio_closep(&f->pb);
    avformat_free_context(f);
  }
};

}  // namespace

struct VideoEncoder {
  std::unique_ptr<AVFormatContext, MuxerFreer> muxer;
  std::unique_ptr<AVCodecContext, CodecFreer> codec;
  std::unique_ptr<AVFrame, FrameFreer> frame{av_frame_alloc()};
  std::unique_ptr<AVPacket, PacketFreer> packet{av_packet_alloc()};
  std::unique_ptr<SwsContext, SwsFreer> sws;
  AVStream* stream = nullptr;
  int64_t next_pts = 0;
};

const char* VideoSink::supported_extensions() { return ".mp4, .mov, .m4v, .mkv, .avi"; }

bool VideoSink::is_video_path(const std::string& path) { return is_video_extension(lower_extension(path)); }

Result<std::unique_ptr<VideoSink>> VideoSink::open(const std::string& path, double fps, int width, int height) {
  const bool to_stdout = path == "-";
  if (!to_stdout && !is_video_extension(lower_extension(path)))
    return fail(ErrorCode::kOutput, "cannot write video to " + path + ": not a video file name (use " + supported_extensions() + ")");
  capture_ffmpeg_log();
  auto sink = std::unique_ptr<VideoSink>(new VideoSink());
  sink->path_ = path;
  sink->shown_ = output_display_name(path);
  sink->to_stdout_ = to_stdout;
  sink->fps_ = fps > 0 && std::isfinite(fps) ? fps : 25.0;
  if (to_stdout) {
    SD_TRY(place_output(path, "video", /*stdout_allowed=*/true));
  } else {
    SD_ASSIGN_OR_RETURN(sink->file_, AtomicFile::create(path, "video"));
    // MP4/MOV write their index last, seeking back to the start; AVI too. Only Matroska streams.
    if (sink->file_.in_place() && lower_extension(path) != ".mkv")
      return fail(ErrorCode::kOutput, "cannot write video to " + path + ": a " + lower_extension(path) +
                                          " file needs seeking back to finish it, which a device or a FIFO cannot do "
                                          "(name it .mkv: Matroska streams)");
  }
  if (width > 0 && height > 0) SD_TRY(sink->open_encoder(cv::Size(width, height)));
  return sink;
}

VideoSink::~VideoSink() = default;  // an unfinished file is removed by file_

Status VideoSink::failed(const std::string& what, int averror) {
  broken_ = true;
  // A reader that went away (`-o - | player` closed) is an output that closed, said as such.
  const std::string why = averror == AVERROR(EPIPE) ? "its reader closed the pipe" : av_error_text(averror);
  return fail(ErrorCode::kOutput, what + " video " + shown_ + " failed: " + why);
}

Status VideoSink::open_encoder(cv::Size size) {
  // 4:2:0 wants even sizes: an odd row or column is dropped (frames are resized to fit), and a
  // side of 1 becomes 2. Said once, so that a video of another size is not a surprise.
  size_ = cv::Size(std::max(2, size.width & ~1), std::max(2, size.height & ~1));
  if (size_ != size)
    log_warn("video %s: %dx%d frames are written at %dx%d (the encoder needs even sizes)", shown_.c_str(), size.width, size.height,
             size_.width, size_.height);
  enc_ = std::make_unique<VideoEncoder>();
  VideoEncoder& e = *enc_;
  auto cannot = [&](const std::string& why) {
    broken_ = true;
    return fail(ErrorCode::kOutput, "cannot write video to " + shown_ + ": " + why);
  };
  if (!e.frame || !e.packet) return cannot("out of memory");
  // The container follows the target's name, not the temporary file's; standard output gets
  // Matroska, the one container here that is written front to back.
  const AVOutputFormat* format =
      to_stdout_ ? av_guess_format("matroska", nullptr, nullptr) : av_guess_format(nullptr, path_.c_str(), nullptr);
  if (!format) return cannot("FFmpeg knows no container for this name");
  const std::string url = to_stdout_ ? "pipe:1" : file_.write_path();
  AVFormatContext* muxer = nullptr;
  if (int r = avformat_alloc_output_context2(&muxer, format, nullptr, url.c_str()); r < 0 || !muxer)
    return cannot(av_error_text(r));
  e.muxer.reset(muxer);
  const bool mjpeg = lower_extension(path_) == ".avi";
  const AVCodec* codec = avcodec_find_encoder(mjpeg ? AV_CODEC_ID_MJPEG : AV_CODEC_ID_MPEG4);
  if (!codec) return cannot(std::string("this FFmpeg has no ") + (mjpeg ? "MJPEG" : "MPEG-4") + " encoder");
  e.stream = avformat_new_stream(muxer, nullptr);
  e.codec.reset(avcodec_alloc_context3(codec));
  if (!e.stream || !e.codec) return cannot("out of memory");
  AVCodecContext* c = e.codec.get();
  c->width = size_.width;
  c->height = size_.height;
  c->time_base = av_inv_q(av_d2q(fps_, 65535));  // MPEG-4 allows denominators up to 2^16 - 1
  c->framerate = av_inv_q(c->time_base);
  c->pix_fmt = mjpeg ? AV_PIX_FMT_YUVJ420P : AV_PIX_FMT_YUV420P;
  c->gop_size = 12;
  // Constant quality (qscale 3 of 31): the detections' boxes and labels stay crisp.
  c->flags |= AV_CODEC_FLAG_QSCALE;
  c->global_quality = FF_QP2LAMBDA * 3;
  if (muxer->oformat->flags & AVFMT_GLOBALHEADER) c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  if (int r = avcodec_open2(c, codec, nullptr); r < 0) return cannot("cannot start the encoder (" + av_error_text(r) + ")");
  if (int r = avcodec_parameters_from_context(e.stream->codecpar, c); r < 0) return cannot(av_error_text(r));
  e.stream->time_base = c->time_base;
  e.stream->avg_frame_rate = c->framerate;
  if (!(muxer->oformat->flags & AVFMT_NOFILE)) {
    if (int r = avio_open(&muxer->pb, url.c_str(), AVIO_FLAG_WRITE); r < 0) return cannot(av_error_text(r));
  }
  if (int r = avformat_write_header(muxer, nullptr); r < 0) return failed("writing the header of", r);
  e.frame->format = c->pix_fmt;
  e.frame->width = c->width;
  e.frame->height = c->height;
  if (int r = av_frame_get_buffer(e.frame.get(), 0); r < 0) return cannot(av_error_text(r));
  return ok();
}

// Moves every packet the encoder has ready into the file (all of them when flushing).
Status VideoSink::encode(bool flush) {
  VideoEncoder& e = *enc_;
  if (int r = avcodec_send_frame(e.codec.get(), flush ? nullptr : e.frame.get()); r < 0) return failed("encoding", r);
  while (true) {
    int r = avcodec_receive_packet(e.codec.get(), e.packet.get());
    if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return ok();
    if (r < 0) return failed("encoding", r);
    av_packet_rescale_ts(e.packet.get(), e.codec->time_base, e.stream->time_base);
    e.packet->stream_index = e.stream->index;
    r = av_interleaved_write_frame(e.muxer.get(), e.packet.get());  // takes the packet's data
    if (r < 0) return failed("writing", r);
  }
}

Status VideoSink::write(const FrameResult& result) {
  if (finished_ || broken_) return fail(ErrorCode::kOutput, "video " + shown_ + " is already finalized");
  const cv::Mat& image = result.frame.bgr(converted_);  // an I420 frame not drawn on is converted here
  if (!enc_) SD_TRY(open_encoder(image.size()));
  const cv::Mat* bgr = &image;
  if (image.size() != size_) {
    // Image folders may mix sizes: fit each frame to the video's size.
    cv::resize(image, resized_, size_);
    bgr = &resized_;
  }
  VideoEncoder& e = *enc_;
  if (int r = av_frame_make_writable(e.frame.get()); r < 0) return failed("encoding", r);
  e.sws.reset(sws_getCachedContext(e.sws.release(), size_.width, size_.height, AV_PIX_FMT_BGR24, size_.width, size_.height,
                                   e.codec->pix_fmt, SWS_BILINEAR, nullptr, nullptr, nullptr));
  if (!e.sws) return fail(ErrorCode::kOutput, "video " + shown_ + ": cannot convert frames to the encoder's pixel format");
  const uint8_t* src[4] = {bgr->data, nullptr, nullptr, nullptr};
  const int src_stride[4] = {static_cast<int>(bgr->step[0]), 0, 0, 0};
  sws_scale(e.sws.get(), src, src_stride, 0, size_.height, e.frame->data, e.frame->linesize);
  e.frame->pts = e.next_pts++;
  SD_TRY(encode(false));
  ++frames_;
  return ok();
}

Status VideoSink::finish() {
  if (finished_) return ok();
  finished_ = true;
  if (broken_) {  // the write that broke it reported the error; nothing broken stays behind
    discard();
    return ok();
  }
  if (!enc_) {  // no frame came, and the size was never known: no video
    discard();
    return ok();
  }
  {
    Status st = encode(true);
    if (st) {
      if (int r = av_write_trailer(enc_->muxer.get()); r < 0) st = failed("finishing", r);  // the index (mp4's moov)
    }
    if (st && enc_->muxer->pb) {
      if (int r = avio_closep(&enc_->muxer->pb); r < 0) st = failed("closing", r);
    }
    if (!st) {
      discard();
      return st;
    }
  }
  enc_.reset();
  return to_stdout_ ? ok() : file_.commit();
}

void VideoSink::discard() {
  finished_ = true;
  enc_.reset();
  file_.discard();
}

}  // namespace sd
