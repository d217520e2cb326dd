#include "sources/ffmpeg_video_source.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <atomic>
#include <functional>
#include <thread>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
}

#include "core/ffmpeg_log.h"
#include "core/log.h"
#include "core/uri_redaction.h"
#include "sources/nvdec_packet_decoder.h"

namespace sd {

namespace {

// A file whose decoder fails this many times in a row is broken, not damaged.
constexpr int kMaxConsecutiveFailures = 25;
// A stream that has not answered and described itself by then is not coming (OpenCV's default).
constexpr std::chrono::seconds kStreamOpenTimeout{30};

std::string av_error(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, buf, sizeof buf);
  return buf;
}

struct FormatCloser {
  void operator()(AVFormatContext* f) const { avformat_close_input(&f); }
};
struct CodecFreer {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct PacketFreer {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct FrameFreer {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct SwsFreer {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};

// Decoder threads: as asked, else as many as cores (what OpenCV's FFmpeg capture uses). Frame
// threads cost CPU of their own (720p H.264 here: 14% more decoding CPU with 2 threads than 1)
// and add a frame of latency each; they pay when decoding, not inference, limits the pipeline.
int decode_threads(int asked) {
  if (asked > 0) return std::min(asked, 64);
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
}

void copy_plane(uint8_t* dst, int dst_stride, const uint8_t* src, int src_stride, int width, int rows) {
  for (int r = 0; r < rows; ++r)
    std::memcpy(dst + static_cast<size_t>(r) * dst_stride, src + static_cast<size_t>(r) * src_stride,
                static_cast<size_t>(width));
}

}  // namespace

struct FfmpegState {
  std::unique_ptr<AVFormatContext, FormatCloser> format;
  std::unique_ptr<AVCodecContext, CodecFreer> codec;
  std::unique_ptr<AVPacket, PacketFreer> packet{av_packet_alloc()};
  std::unique_ptr<AVFrame, FrameFreer> frame{av_frame_alloc()};
  std::unique_ptr<SwsContext, SwsFreer> sws;
  std::unique_ptr<NvdecPacketDecoder> nvdec;  // --decode auto|nvdec: NVDEC instead of `codec`
  int stream = -1;
  // A stream's blocking calls end when the run stops or the deadline passes (FFmpeg asks
  // interrupted() while it waits on the network, and its calls return AVERROR_EXIT).
  std::function<bool()> should_stop;
  Clock::time_point deadline = Clock::time_point::max();
  bool timed_out = false;
  static int interrupted(void* opaque) {
    auto* self = static_cast<FfmpegState*>(opaque);
    if (self->should_stop && self->should_stop()) return 1;
    if (Clock::now() < self->deadline) return 0;
    self->timed_out = true;
    return 1;
  }
};

FfmpegVideoSource::FfmpegVideoSource() : av_(std::make_unique<FfmpegState>()) {}
FfmpegVideoSource::~FfmpegVideoSource() = default;

Result<std::unique_ptr<Source>> FfmpegVideoSource::open(const std::string& path, const SourceOptions& options) {
  return open_input(path, options, false);
}

Result<std::unique_ptr<Source>> FfmpegVideoSource::open_stream(const std::string& url, const SourceOptions& options) {
  return open_input(url, options, true);
}

Result<std::unique_ptr<Source>> FfmpegVideoSource::open_input(const std::string& path, const SourceOptions& options, bool network) {
  auto src = std::unique_ptr<FfmpegVideoSource>(new FfmpegVideoSource());
  src->source_id_ = options.source_id;
  src->info_.uri = without_password(path);  // the name every message and output shows
  const std::string& shown = src->info_.uri;
  src->info_.kind = network ? SourceKind::kStream : SourceKind::kVideoFile;
  src->stream_ = network;
  src->stall_timeout_ms_ = options.stall_timeout_ms;
  FfmpegState& av = *src->av_;
  const std::string what = network ? "stream " : "video file ";
  auto cannot = [&](const std::string& why) {
    return fail(ErrorCode::kSource, "cannot open " + what + shown + ": " + without_password(why));
  };
  if (!av.packet || !av.frame) return cannot("out of memory");

  capture_ffmpeg_log();  // damaged frames are reported by us, one line in all
  take_ffmpeg_error();
  AVFormatContext* fmt = avformat_alloc_context();
  if (!fmt) return cannot("out of memory");
  if (network) {
    av.should_stop = options.should_stop;
    av.deadline = Clock::now() + kStreamOpenTimeout;
    fmt->interrupt_callback.callback = &FfmpegState::interrupted;
    fmt->interrupt_callback.opaque = &av;
  }
  if (int r = avformat_open_input(&fmt, path.c_str(), nullptr, nullptr); r < 0) {  // frees fmt
    if (!network) return cannot("not a video FFmpeg can read (" + av_error(r) + ")");
    if (av.timed_out) return cannot("no answer within " + std::to_string(kStreamOpenTimeout.count()) + " s");
    const std::string why = take_ffmpeg_error();
    return cannot(why.empty() ? av_error(r) : why);
  }
  av.format.reset(fmt);
  // FFmpeg reads any text as ANSI art (its "tty" demuxer): a README "decodes" into frames.
  for (const char* text_format : {"tty", "bin", "xbin", "adf", "idf"})
    if (std::strcmp(fmt->iformat->name, text_format) == 0) return fail(ErrorCode::kSource, "not a video: " + shown + " (it reads as text)");
  if (int r = avformat_find_stream_info(fmt, nullptr); r < 0) return cannot("no stream information (" + av_error(r) + ")");
  const AVCodec* decoder = nullptr;
  av.stream = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0);
  if (av.stream < 0 || !decoder) return cannot(av.stream == AVERROR_DECODER_NOT_FOUND ? "no decoder for its video codec" : "no video stream");
  AVStream* stream = fmt->streams[av.stream];
  src->mpegts_ = std::strcmp(fmt->iformat->name, "mpegts") == 0;
  switch (stream->codecpar->codec_id) {
    case AV_CODEC_ID_ANSI:
    case AV_CODEC_ID_BINTEXT:
    case AV_CODEC_ID_XBIN:
    case AV_CODEC_ID_IDF:
      return fail(ErrorCode::kSource, "not a video: " + shown + " (it reads as text)");
    default: break;
  }

  SD_TRY(src->choose_decoder(*stream->codecpar, options.decode));

  av.codec.reset(avcodec_alloc_context3(decoder));
  if (!av.codec) return cannot("out of memory");
  if (int r = avcodec_parameters_to_context(av.codec.get(), stream->codecpar); r < 0) return cannot(av_error(r));
  av.codec->thread_count = decode_threads(options.decode_threads);
  av.codec->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
  if (!av.nvdec) {
    if (int r = avcodec_open2(av.codec.get(), decoder, nullptr); r < 0)
      return cannot(std::string("cannot start the ") + decoder->name + " decoder (" + av_error(r) + ")");
    src->info_.decoder = std::string("cpu (") + decoder->name + ", " + std::to_string(av.codec->thread_count) + " thread" +
                         (av.codec->thread_count == 1 ? ")" : "s)");
  }

  SourceInfo& info = src->info_;
  AVRational rate = av_guess_frame_rate(fmt, stream, nullptr);
  info.fps = rate.num > 0 && rate.den > 0 ? av_q2d(rate) : 0;
  if (!std::isfinite(info.fps) || info.fps <= 0 || info.fps > 1000) info.fps = 0;
  info.width = stream->codecpar->width;
  info.height = stream->codecpar->height;
  // The frame count as OpenCV reports it: the container's, else duration x frame rate.
  if (stream->nb_frames > 0) {
    info.frame_count = stream->nb_frames;
  } else if (info.fps > 0) {
    double seconds = stream->duration != AV_NOPTS_VALUE ? static_cast<double>(stream->duration) * av_q2d(stream->time_base)
                                                         : fmt->duration != AV_NOPTS_VALUE ? static_cast<double>(fmt->duration) / AV_TIME_BASE
                                                                                           : 0;
    if (seconds > 0) info.frame_count = static_cast<int64_t>(std::floor(seconds * info.fps + 0.5));
  }
  if (network) {
    // Frames arrive on the sender's clock; only a file served over HTTP (it has a length) is
    // read like a file.
    const bool http = path.rfind("http", 0) == 0;
    info.live = !(http && info.frame_count > 0);
    if (info.live) info.frame_count = -1;
    av.deadline = Clock::time_point::max();
    src->start_ = Clock::now();
  }
  return std::unique_ptr<Source>(std::move(src));
}

Result<bool> FfmpegVideoSource::read(Frame& frame) {
  FfmpegState& av = *av_;
  frame.source_id = source_id_;
  if (stream_ && stall_timeout_ms_ > 0)
    av.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(stall_timeout_ms_));
  av.timed_out = false;
  while (true) {
    int r = 0;
    if (av.nvdec) {
      int64_t pts = 0;
      auto got = av.nvdec->receive(frame, pts);
      if (!got) return nvdec_failed(frame, got.error());
      if (*got) {
        frame.capture_time = Clock::now();
        return finish(frame, pts);
      }
      if (draining_) return false;
    } else {
      r = avcodec_receive_frame(av.codec.get(), av.frame.get());
      if (r == 0) {
        auto delivered = deliver(frame);
        av_frame_unref(av.frame.get());
        return delivered;
      }
      if (r == AVERROR_EOF) return false;
      if (r != AVERROR(EAGAIN)) return undecodable(frame, r);
      if (draining_) return false;  // cannot happen after a flush; ends the file rather than spin
    }
    r = av_read_frame(av.format.get(), av.packet.get());
    if (r == AVERROR_EXIT && stream_) {
      // Cut short by the callback: the run is stopping (the end), or no frame came in time.
      if (!av.timed_out) return false;
      char waited[32];
      std::snprintf(waited, sizeof waited, "%.1f s", stall_timeout_ms_ / 1000.0);
      return fail(ErrorCode::kSource, "stream " + info_.uri + " delivered no frame for " + waited);
    }
    if (r < 0) {
      if (r != AVERROR_EOF) read_error_ = av_error(r);
      if (AVIOContext* pb = av.format->pb) {
        stopped_at_ = avio_tell(pb);
        file_size_ = avio_size(pb);
      }
      // End of file, or a read error: either way flush what the decoder holds. A truncated file
      // ends early; its missing frames are not frames we can count.
      draining_ = true;
      if (!av.nvdec) {
        avcodec_send_packet(av.codec.get(), nullptr);
      } else if (Status s = av.nvdec->send(nullptr); !s) {
        return nvdec_failed(frame, s.error());
      }
      continue;
    }
    if (av.packet->stream_index != av.stream) {
      av_packet_unref(av.packet.get());
      continue;
    }
    if (av.packet->flags & AV_PKT_FLAG_CORRUPT) ++corrupt_packets_;
    if (av.nvdec) {
      Status s = av.nvdec->send(av.packet.get());
      av_packet_unref(av.packet.get());
      if (!s) return nvdec_failed(frame, s.error());
      continue;
    }
    r = avcodec_send_packet(av.codec.get(), av.packet.get());
    av_packet_unref(av.packet.get());
    if (r < 0 && r != AVERROR(EAGAIN) && r != AVERROR_EOF) return undecodable(frame, r);
  }
}

// A frame the decoder could not make (an error from sending its packet or from receiving it):
// it keeps its index and is skipped and counted by the caller, unless the decoder keeps failing.
Result<bool> FfmpegVideoSource::undecodable(Frame& frame, int averror) {
  frame.capture_time = Clock::now();
  frame.index = next_index_++;
  ++undecodable_;
  if (++consecutive_failures_ >= kMaxConsecutiveFailures)
    return fail(ErrorCode::kSource, std::string(source_kind_name(info_.kind)) + " " + info_.uri + " is broken: " + std::to_string(consecutive_failures_) +
                                        " frames in a row could not be decoded (" + av_error(averror) + ")");
  return fail(ErrorCode::kCorruptFrame, "frame " + std::to_string(frame.index) + " of " + info_.uri +
                                            " could not be decoded (" + av_error(averror) + ")");
}

// A stream that ended before the frames it declared, or a live stream that ended at all.
std::optional<std::string> FfmpegVideoSource::stream_damage() const {
  if (!draining_) return std::nullopt;  // not ended (the run stopped first)
  if (info_.frame_count > 0) {
    if (next_index_ >= info_.frame_count) return std::nullopt;
    return info_.uri + " was cut short: " + std::to_string(next_index_) + " frames of " + std::to_string(info_.frame_count) +
           " declared";
  }
  // A live stream (RTSP, RTMP, SRT) has no end of its own: it ending is a cut. HTTP may serve a
  // finite stream without a frame count (HLS, MJPEG over HTTP): its end is taken as the end.
  if (info_.uri.rfind("http", 0) == 0) return std::nullopt;
  return info_.uri + " was cut short: the stream ended after " + std::to_string(next_index_) + " frames";
}

std::optional<std::string> FfmpegVideoSource::damage() const {
  if (stream_) return stream_damage();
  const int64_t decoded = next_index_ - undecodable_;
  // A transport stream's length is estimated from its last timestamps, so it declares nothing.
  const bool declared = info_.frame_count > 0 && !mpegts_;
  // Only a file read to its end can be short of its length (a run may stop early: --max-frames).
  const bool short_of_declared = draining_ && declared && next_index_ < info_.frame_count;
  // Where reading stopped, when it stopped on an error (a clean end may leave an index after the
  // data, as MP4's moov, unread).
  const bool data_ended_early = !read_error_.empty() && stopped_at_ >= 0 && file_size_ > 0 && stopped_at_ < file_size_;
  // A transport stream has no frame count; one cut anywhere but at a packet boundary shows in its size.
  const bool ts_cut = draining_ && mpegts_ && file_size_ > 0 && file_size_ % 188 != 0 && file_size_ % 192 != 0;
  if (undecodable_ == 0 && corrupt_packets_ == 0 && read_error_.empty() && !short_of_declared && !ts_cut)
    return std::nullopt;
  std::string what = info_.uri + " is damaged: " + std::to_string(decoded) + " frames decoded";
  if (declared) what += " of " + std::to_string(info_.frame_count) + " declared";
  if (undecodable_ > 0) what += ", " + std::to_string(undecodable_) + " could not be decoded";
  if (corrupt_packets_ > 0) what += ", " + std::to_string(corrupt_packets_) + " cut off or corrupt in the file";
  if (!read_error_.empty()) what += ", reading stopped on an error (" + read_error_ + ")";
  if (data_ended_early)
    what += " at " + std::to_string(stopped_at_ * 100 / file_size_) + "% of the file";
  else if (short_of_declared)
    what += ", the file ends before its declared length";
  else if (ts_cut)
    what += ", the file ends in the middle of a transport packet (cut short)";
  return what;
}

Result<bool> FfmpegVideoSource::deliver(Frame& frame) {
  FfmpegState& av = *av_;
  const AVFrame* f = av.frame.get();
  const int w = f->width, h = f->height;
  frame.capture_time = Clock::now();
  if (w <= 0 || h <= 0) return fail(ErrorCode::kSource, std::string(source_kind_name(info_.kind)) + " " + info_.uri + " delivered an empty frame");
  // Limited-range 4:2:0 goes through as I420; full range (MJPEG's yuvj420p) and everything else
  // becomes BGR here.
  const bool i420 = f->format == AV_PIX_FMT_YUV420P && f->color_range != AVCOL_RANGE_JPEG && w % 2 == 0 && h % 2 == 0;
  if (i420) {
    frame.yuv.create(h * 3 / 2, w, CV_8UC1);
    uint8_t* dst = frame.yuv.ptr<uint8_t>();
    copy_plane(dst, w, f->data[0], f->linesize[0], w, h);
    dst += static_cast<size_t>(w) * h;
    copy_plane(dst, w / 2, f->data[1], f->linesize[1], w / 2, h / 2);
    dst += static_cast<size_t>(w / 2) * (h / 2);
    copy_plane(dst, w / 2, f->data[2], f->linesize[2], w / 2, h / 2);
    frame.format = PixelFormat::kI420;
  } else {
    av.sws.reset(sws_getCachedContext(av.sws.release(), w, h, static_cast<AVPixelFormat>(f->format), w, h,
                                      AV_PIX_FMT_BGR24, SWS_BICUBIC, nullptr, nullptr, nullptr));
    if (!av.sws) return fail(ErrorCode::kSource, std::string(source_kind_name(info_.kind)) + " " + info_.uri + ": cannot convert its pixel format to BGR");
    // swscale's SIMD converters write whole vectors, past the end of a row whose width is not a
    // multiple of theirs (and so past the end of the last row): the image is a view into a
    // buffer with padded rows and a spare row, reused while the size stays.
    const int padded = FFALIGN(w, 64) + 64;
    if (frame.image.cols != w || frame.image.rows != h || frame.image.type() != CV_8UC3 ||
        frame.image.step[0] != static_cast<size_t>(padded) * 3 || frame.image.u == nullptr) {
      cv::Mat backing(h + 1, padded, CV_8UC3);
      frame.image = backing(cv::Rect(0, 0, w, h));
    }
    uint8_t* dst[4] = {frame.image.ptr<uint8_t>(), nullptr, nullptr, nullptr};
    int dst_stride[4] = {static_cast<int>(frame.image.step[0]), 0, 0, 0};
    sws_scale(av.sws.get(), f->data, f->linesize, 0, h, dst, dst_stride);
    frame.format = PixelFormat::kBgr;
  }
  return finish(frame, f->best_effort_timestamp);
}

// The frame's index and time, once its pixels are in place; `pts` in the stream's time base.
Result<bool> FfmpegVideoSource::finish(Frame& frame, int64_t pts) {
  FfmpegState& av = *av_;
  consecutive_failures_ = 0;
  if (info_.width == 0) {
    info_.width = frame.size().width;
    info_.height = frame.size().height;
  }
  frame.index = next_index_++;
  if (stream_) {
    frame.timestamp_ms = std::chrono::duration<double, std::milli>(frame.capture_time - start_).count();
    return true;
  }
  frame.timestamp_ms = info_.fps > 0 ? static_cast<double>(frame.index) * 1000.0 / info_.fps
                       : pts != AV_NOPTS_VALUE ? static_cast<double>(pts) * av_q2d(av.format->streams[av.stream]->time_base) * 1000.0
                                               : 0;
  return true;
}

// --decode: NVDEC for H.264/HEVC where it is present (auto, nvdec), else the CPU. With nvdec, a
// video NVDEC cannot decode here is refused (exit 3, docs/errors.md); with auto the CPU decodes it
// and the reason is said once per run.
Status FfmpegVideoSource::choose_decoder(const AVCodecParameters& par, VideoDecode decode) {
  if (decode == VideoDecode::kCpu) return ok();
  auto nvdec = NvdecPacketDecoder::open(par);
  if (nvdec) {
    av_->nvdec = std::move(*nvdec);
    info_.decoder = "nvdec (" + av_->nvdec->describe() + ")";
    return ok();
  }
  if (decode == VideoDecode::kNvdec)
    return fail(ErrorCode::kModel, "--decode nvdec: " + info_.uri + ": " + nvdec.error().message);
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) log_info("--decode auto: decoding on the CPU (%s)", nvdec.error().message.c_str());
  return ok();
}

bool FfmpegVideoSource::keep_frames_on_device(int cuda_device, std::string& why_not) {
  if (!av_->nvdec) {
    why_not = "decoded on the CPU";
    return false;
  }
  if (av_->nvdec->device() != cuda_device) {
    why_not = "NVDEC decodes on cuda:" + std::to_string(av_->nvdec->device()) + ", the model runs on cuda:" + std::to_string(cuda_device);
    return false;
  }
  av_->nvdec->keep_on_device();
  return true;
}

// NVDEC failed on a packet: a packet it (or the Annex-B filter) refused is one frame lost, as
// the CPU decoder's would be; anything else (the GPU or driver) ends the source.
Result<bool> FfmpegVideoSource::nvdec_failed(Frame& frame, const Error& e) {
  if (e.code == ErrorCode::kCorruptFrame || e.code == ErrorCode::kInternal) {
    auto r = undecodable(frame, AVERROR_INVALIDDATA);
    return fail(r.error().code, r.error().message + ": " + e.message);
  }
  return fail(ErrorCode::kSource, std::string(source_kind_name(info_.kind)) + " " + info_.uri + ": " + e.message);
}

}  // namespace sd
