// streamdet_nvdec_clip: makes the GPU check's NVDEC clip (tools/nvdec_clip.h): a synthetic scene
// (moving shapes over a gradient, with fine texture so that a wrong pixel shows in the PSNR)
// encoded by Debian's libx264 as H.264 Annex-B, with B-frames (so display order differs from
// decode order) and two IDR frames, at a size that is not a multiple of 16 (so the decoder must
// crop); then decoded by FFmpeg's H.264 decoder on the CPU into the NV12 reference frames.
// With --mp4 it also writes the same scene as H.264 in MP4 (length-prefixed NAL units, the
// parameter sets in the container), what the Annex-B filter's tests demux.
// --codec hevc makes the same with libx265 (clip.hevc). --no-reference leaves reference.nv12 empty
// (the frames are still decoded and counted): the GPU check's 720p nvdec_e2e clip, which needs none.
//   streamdet_nvdec_clip --out DIR [--codec h264|hevc] [--mp4 FILE] [--width 640 --height 360 --frames 48] [--no-reference]
#include <cstdio>
#include <cstring>
#include <memory>

#include <CLI/CLI.hpp>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
}

#include "nvdec_clip.h"

using namespace sd;

namespace {

std::string av_text(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, buf, sizeof buf);
  return buf;
}

// Frame t of the scene, into an allocated YUV420P frame.
void draw(AVFrame* f, int t) {
  const int w = f->width, h = f->height;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      int v = 40 + (x + 2 * t) * 120 / w + y * 60 / h + ((x * 7 + y * 13) % 11);  // gradient + texture
      auto inside = [&](int cx, int cy, int r) { return (x - cx) * (x - cx) + (y - cy) * (y - cy) < r * r; };
      if (inside(60 + 6 * t, h / 2, 40)) v = 210;
      if (x > w - 120 - 4 * t && x < w - 40 - 4 * t && y > 40 + t && y < 120 + t) v = 30 + (x % 8) * 8;
      f->data[0][y * f->linesize[0] + x] = static_cast<uint8_t>(std::min(v, 235));
    }
  for (int y = 0; y < h / 2; ++y)
    for (int x = 0; x < w / 2; ++x) {
      f->data[1][y * f->linesize[1] + x] = static_cast<uint8_t>(128 + ((x + t) % 32) - 16);
      f->data[2][y * f->linesize[2] + x] = static_cast<uint8_t>(128 + ((y * 3 + t) % 40) - 20);
    }
}

struct Codec {
  AVCodecContext* c = nullptr;
  ~Codec() { avcodec_free_context(&c); }
};

// The scene through libx264 (single-threaded: the same bytes on every machine), each packet to
// `take`; with `global_header` the parameter sets go to the extradata (what MP4 wants).
template <typename Take>
std::string encode(const std::string& codec, int width, int height, int frames, bool global_header, AVCodecContext** opened, Take take) {
  const bool hevc = codec == "hevc";
  const char* name = hevc ? "libx265" : "libx264";
  const AVCodec* encoder = avcodec_find_encoder_by_name(name);
  if (!encoder) return std::string("this FFmpeg has no ") + name + " encoder";
  AVCodecContext* c = avcodec_alloc_context3(encoder);
  *opened = c;
  c->width = width, c->height = height;
  c->pix_fmt = AV_PIX_FMT_YUV420P;
  c->time_base = {1, 30};
  c->framerate = {30, 1};
  c->gop_size = 24;
  c->max_b_frames = 2;
  c->thread_count = 1;
  if (global_header) c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  av_opt_set(c->priv_data, "preset", "medium", 0);
  av_opt_set(c->priv_data, "crf", "23", 0);
  if (hevc)
    av_opt_set(c->priv_data, "x265-params", "keyint=24:min-keyint=24:scenecut=0:b-adapt=0:bframes=2:frame-threads=1:pools=none:log-level=error", 0);
  else
    av_opt_set(c->priv_data, "x264-params", "keyint=24:min-keyint=24:scenecut=0:b-adapt=0:bframes=2", 0);
  if (int r = avcodec_open2(c, encoder, nullptr); r < 0) return std::string(name) + ": " + av_text(r);
  AVFrame* f = av_frame_alloc();
  f->width = width, f->height = height, f->format = AV_PIX_FMT_YUV420P;
  av_frame_get_buffer(f, 0);
  AVPacket* pkt = av_packet_alloc();
  std::string error;
  auto drain = [&]() {
    while (error.empty()) {
      int r = avcodec_receive_packet(c, pkt);
      if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return;
      if (r < 0) error = "encoding: " + av_text(r);
      else error = take(pkt);
      av_packet_unref(pkt);
    }
  };
  for (int t = 0; t < frames && error.empty(); ++t) {
    av_frame_make_writable(f);
    draw(f, t);
    f->pts = t;
    if (int r = avcodec_send_frame(c, f); r < 0) error = "encoding: " + av_text(r);
    drain();
  }
  avcodec_send_frame(c, nullptr);
  drain();
  av_frame_free(&f);
  av_packet_free(&pkt);
  return error;
}

// The scene as H.264 in MP4.
std::string write_mp4(const std::string& path, int width, int height, int frames) {
  AVFormatContext* oc = nullptr;
  if (int r = avformat_alloc_output_context2(&oc, nullptr, "mp4", path.c_str()); r < 0) return path + ": " + av_text(r);
  std::unique_ptr<AVFormatContext, void (*)(AVFormatContext*)> closer(oc, [](AVFormatContext* o) {
    if (o->pb) avio_closep(&o->pb);
    avformat_free_context(o);
  });
  AVStream* st = avformat_new_stream(oc, nullptr);
  Codec enc;
  bool started = false;
  std::string error = encode("h264", width, height, frames, true, &enc.c, [&](AVPacket* pkt) -> std::string {
    if (!started) {
      avcodec_parameters_from_context(st->codecpar, enc.c);
      st->time_base = enc.c->time_base;
      if (int r = avio_open(&oc->pb, path.c_str(), AVIO_FLAG_WRITE); r < 0) return path + ": " + av_text(r);
      if (int r = avformat_write_header(oc, nullptr); r < 0) return path + ": " + av_text(r);
      started = true;
    }
    av_packet_rescale_ts(pkt, enc.c->time_base, st->time_base);
    pkt->stream_index = 0;
    if (int r = av_interleaved_write_frame(oc, pkt); r < 0) return path + ": " + av_text(r);
    return "";
  });
  if (!error.empty()) return error;
  if (int r = av_write_trailer(oc); r < 0) return path + ": " + av_text(r);
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"makes the GPU check's NVDEC clip: H.264 Annex-B by libx264 and its CPU-decoded NV12 frames"};
  std::string out, mp4, codec = "h264";
  int width = 640, height = 360, frames = 48;
  bool no_reference = false;
  app.add_option("--out", out, "folder for clip.h264, clip.json, reference.nv12")->required();
  app.add_option("--mp4", mp4, "also write the scene as H.264 in MP4 here");
  app.add_option("--codec", codec, "h264 (libx264) or hevc (libx265)")->capture_default_str()->check(CLI::IsMember({"h264", "hevc"}));
  app.add_option("--width", width)->capture_default_str();
  app.add_option("--height", height)->capture_default_str();
  app.add_option("--frames", frames)->capture_default_str();
  app.add_flag("--no-reference", no_reference, "leave reference.nv12 empty (a clip for timing alone)");
  CLI11_PARSE(app, argc, argv);
  auto die = [](const std::string& what) {
    std::fprintf(stderr, "streamdet_nvdec_clip: %s\n", what.c_str());
    return 1;
  };

  av_log_set_level(AV_LOG_ERROR);  // libx264's statistics are not ours to print
  NvdecClip clip;
  clip.width = width, clip.height = height;
  clip.codec = codec;
  // Encode (Annex-B, the parameter sets in band).
  Codec enc;
  const std::string error = encode(codec, width, height, frames, false, &enc.c, [&](AVPacket* pkt) -> std::string {
    clip.packets.push_back({clip.stream.size(), static_cast<size_t>(pkt->size), pkt->pts});
    clip.stream.insert(clip.stream.end(), pkt->data, pkt->data + pkt->size);
    return "";
  });
  if (!error.empty()) return die(error);
  AVPacket* pkt = av_packet_alloc();

  // Decode on the CPU, packet by packet as NVDEC will be fed.
  Codec dec;
  const AVCodec* cpu_decoder = avcodec_find_decoder(codec == "hevc" ? AV_CODEC_ID_HEVC : AV_CODEC_ID_H264);
  dec.c = avcodec_alloc_context3(cpu_decoder);
  dec.c->thread_count = 1;
  if (int r = avcodec_open2(dec.c, cpu_decoder, nullptr); r < 0) return die(codec + " decoder: " + av_text(r));
  AVFrame* d = av_frame_alloc();
  auto take_frames = [&]() -> int {
    while (true) {
      int r = avcodec_receive_frame(dec.c, d);
      if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return 0;
      if (r < 0) return r;
      if (d->width != width || d->height != height || d->format != AV_PIX_FMT_YUV420P) return AVERROR_INVALIDDATA;
      clip.display_pts.push_back(d->pts);
      for (int y = 0; y < height; ++y) clip.reference.insert(clip.reference.end(), d->data[0] + y * d->linesize[0], d->data[0] + y * d->linesize[0] + width);
      for (int y = 0; y < height / 2; ++y)
        for (int x = 0; x < width / 2; ++x) {
          clip.reference.push_back(d->data[1][y * d->linesize[1] + x]);
          clip.reference.push_back(d->data[2][y * d->linesize[2] + x]);
        }
      av_frame_unref(d);
    }
  };
  for (const auto& p : clip.packets) {
    pkt->data = clip.stream.data() + p.offset;
    pkt->size = static_cast<int>(p.size);
    pkt->pts = p.pts;
    if (int r = avcodec_send_packet(dec.c, pkt); r < 0) return die("decoding: " + av_text(r));
    if (int r = take_frames(); r < 0) return die("decoding: " + av_text(r));
  }
  pkt->data = nullptr, pkt->size = 0;
  avcodec_send_packet(dec.c, nullptr);
  if (int r = take_frames(); r < 0) return die("decoding: " + av_text(r));
  av_frame_free(&d);
  av_packet_free(&pkt);
  if (static_cast<int>(clip.frames()) != frames)
    return die(std::to_string(clip.frames()) + " frames decoded of " + std::to_string(frames) + " encoded");
  if (no_reference) clip.reference.clear();
  if (Status s = save_nvdec_clip(clip, out); !s) return die(s.error().message);
  if (!mp4.empty())
    if (std::string e = write_mp4(mp4, width, height, frames); !e.empty()) return die(e);
  std::printf("%s: %dx%d, %zu frames, %zu packets, %zu bytes of %s\n", out.c_str(), width, height, clip.frames(), clip.packets.size(),
              clip.stream.size(), codec.c_str());
  return 0;
}
