// --decode and the NVDEC path's host side (sources/nvdec_packet_decoder.h): the Annex-B filter on
// a demuxed MP4, the codec check that picks NVDEC or the CPU, the NV12 -> I420 copy, --decode's
// parsing, auto's fallback said once, nvdec refused in one line (exit 3) where NVDEC is missing,
// the decoder named in the profile; and the GPU check's clip (tools/nvdec_clip.h): its packets
// are Annex-B with B-frames, its reference frames are what FFmpeg decodes of it, and the PSNR.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include "cli_util.h"
#include "engine/native/cuda/nvdec_decoder.h"
#include "nvdec_clip.h"
#include "sources/ffmpeg_video_source.h"
#include "sources/nvdec_packet_decoder.h"

namespace sd {
namespace {

// The GPU check's clip tool (tools/make_nvdec_clip.cpp), built with the test programs.
std::string clip_tool() {
  return (std::filesystem::path(STREAMDET_BINARY).parent_path() / "tools" / "streamdet_nvdec_clip").string();
}

// An H.264 MP4 (the bundled sample is MPEG-4 Part 2), made once per test program by the clip tool:
// "" when the tool is not built.
const std::string& h264_mp4() {
  static test::TempDir dir;
  static const std::string path = [] {
    const std::string mp4 = dir.file("scene.mp4");
    if (!std::filesystem::exists(clip_tool())) return std::string();
    const std::string cmd = clip_tool() + " --out " + dir.file("clip") + " --mp4 " + mp4 + " >/dev/null";
    return std::system(cmd.c_str()) == 0 ? mp4 : std::string();
  }();
  return path;
}
#define NEED_H264_MP4()                                                            \
  const std::string kSample = h264_mp4();                                          \
  if (kSample.empty()) GTEST_SKIP() << clip_tool() << " is not built (streamdet_test_programs builds it)"

bool nvdec_here() { return static_cast<bool>(native::cuda::nvdec_support(native::cuda::NvdecCodec::kH264)); }

// The NAL unit types of an Annex-B buffer, in order; empty when it does not start with a start code.
std::vector<int> nal_types(const uint8_t* p, size_t n) {
  std::vector<int> types;
  if (n < 4 || !(p[0] == 0 && p[1] == 0 && (p[2] == 1 || (p[2] == 0 && p[3] == 1)))) return types;
  for (size_t i = 0; i + 3 < n; ++i)
    if (p[i] == 0 && p[i + 1] == 0 && p[i + 2] == 1) {
      types.push_back(p[i + 3] & 0x1f);
      i += 2;
    }
  return types;
}

TEST(NvdecSource, TheAnnexBFilterTurnsMp4PacketsIntoStartCodesWithParameterSets) {
  NEED_H264_MP4();
  AVFormatContext* fmt = nullptr;
  ASSERT_EQ(avformat_open_input(&fmt, kSample.c_str(), nullptr, nullptr), 0);
  std::unique_ptr<AVFormatContext, void (*)(AVFormatContext*)> closer(fmt, [](AVFormatContext* f) { avformat_close_input(&f); });
  ASSERT_GE(avformat_find_stream_info(fmt, nullptr), 0);
  const int stream = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  ASSERT_GE(stream, 0);
  const AVCodecParameters& par = *fmt->streams[stream]->codecpar;
  ASSERT_EQ(par.codec_id, AV_CODEC_ID_H264) << "the sample is H.264 in MP4";
  // In MP4 the packets are length-prefixed, not Annex-B.
  auto filter = AnnexBFilter::open(par);
  ASSERT_TRUE(filter) << filter.error().message;
  AVPacket* pkt = av_packet_alloc();
  int packets = 0, keyframes_with_sps_pps = 0;
  bool raw_was_annexb = true;
  while (av_read_frame(fmt, pkt) >= 0) {
    if (pkt->stream_index != stream) {
      av_packet_unref(pkt);
      continue;
    }
    if (packets == 0) raw_was_annexb = !nal_types(pkt->data, static_cast<size_t>(pkt->size)).empty();
    const bool key = pkt->flags & AV_PKT_FLAG_KEY;
    ASSERT_TRUE(filter->send(pkt));
    av_packet_unref(pkt);
    while (true) {
      auto out = filter->take();
      ASSERT_TRUE(out);
      if (!*out) break;
      const auto types = nal_types((*out)->data, static_cast<size_t>((*out)->size));
      ASSERT_FALSE(types.empty()) << "packet " << packets << " does not start with a start code";
      const bool sps = std::find(types.begin(), types.end(), 7) != types.end(), pps = std::find(types.begin(), types.end(), 8) != types.end();
      if (key && sps && pps) ++keyframes_with_sps_pps;
      ++packets;
    }
  }
  av_packet_free(&pkt);
  EXPECT_FALSE(raw_was_annexb) << "the MP4's own packets should need the filter";
  EXPECT_EQ(packets, 48);
  EXPECT_EQ(keyframes_with_sps_pps, 2) << "the parameter sets go in band before each keyframe (two IDR frames)";
}

TEST(NvdecSource, OnlyEightBitH264AndHevcGoToNvdec) {
  AVCodecParameters* par = avcodec_parameters_alloc();
  par->codec_type = AVMEDIA_TYPE_VIDEO;
  par->codec_id = AV_CODEC_ID_H264;
  par->format = AV_PIX_FMT_YUV420P;
  EXPECT_TRUE(nvdec_codec_for(*par));
  par->codec_id = AV_CODEC_ID_HEVC;
  EXPECT_EQ(*nvdec_codec_for(*par), native::cuda::NvdecCodec::kHevc);
  par->format = AV_PIX_FMT_YUV420P10LE;
  auto ten_bit = nvdec_codec_for(*par);
  ASSERT_FALSE(ten_bit);
  EXPECT_EQ(ten_bit.error().message, "NVDEC decodes 8-bit 4:2:0 here; this HEVC video is yuv420p10le");
  par->codec_id = AV_CODEC_ID_MJPEG;
  par->format = AV_PIX_FMT_YUVJ420P;
  auto mjpeg = nvdec_codec_for(*par);
  ASSERT_FALSE(mjpeg);
  EXPECT_EQ(mjpeg.error().message, "NVDEC decodes H.264 and HEVC here; this video is mjpeg");
  avcodec_parameters_free(&par);
}

TEST(NvdecSource, Nv12BecomesTheI420TheCpuDecoderHandsOver) {
  const int w = 6, h = 4, pitch = 8;
  std::vector<uint8_t> nv12(static_cast<size_t>(pitch) * h * 3 / 2, 0);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) nv12[static_cast<size_t>(y * pitch + x)] = static_cast<uint8_t>(10 * y + x);
  for (int y = 0; y < h / 2; ++y)
    for (int x = 0; x < w / 2; ++x) {
      nv12[static_cast<size_t>(pitch * h + y * pitch + 2 * x)] = static_cast<uint8_t>(100 + 10 * y + x);
      nv12[static_cast<size_t>(pitch * h + y * pitch + 2 * x + 1)] = static_cast<uint8_t>(200 + 10 * y + x);
    }
  cv::Mat yuv;
  nv12_to_i420(nv12.data(), pitch, w, h, yuv);
  ASSERT_EQ(yuv.rows, h * 3 / 2);
  ASSERT_EQ(yuv.cols, w);
  const uint8_t* p = yuv.ptr<uint8_t>();
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) EXPECT_EQ(p[y * w + x], 10 * y + x);
  const uint8_t* u = p + w * h;
  const uint8_t* v = u + (w / 2) * (h / 2);
  for (int y = 0; y < h / 2; ++y)
    for (int x = 0; x < w / 2; ++x) {
      EXPECT_EQ(u[y * (w / 2) + x], 100 + 10 * y + x);
      EXPECT_EQ(v[y * (w / 2) + x], 200 + 10 * y + x);
    }
}

TEST(NvdecSource, DecodeOptionIsParsedAndAutoFallsBackToTheCpuSayingSoOnce) {
  NEED_H264_MP4();
  test::TempDir dir;
  auto bad = test::run_cli(dir, {"run", "-m", test::kTinyModel, "-s", kSample, "--decode", "gpu", "--max-frames", "2", "-q"});
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--decode"), std::string::npos) << bad.err;
  // A codec NVDEC does not take, asked for by name: one line, exit 3, whatever the machine.
  const std::string mpeg4 = std::string(STREAMDET_SOURCE_DIR) + "/samples/shapes_640x360.mp4";
  auto other = test::run_cli(dir, {"run", "-m", test::kTinyModel, "-s", mpeg4, "--decode", "nvdec", "-d", dir.file("o.jsonl")});
  EXPECT_EQ(other.code, 3) << other.err;
  EXPECT_EQ(test::last_line(other.err), "streamdet: error: --decode nvdec: " + mpeg4 + ": NVDEC decodes H.264 and HEVC here; this video is mpeg4")
      << other.err;
  if (nvdec_here()) GTEST_SKIP() << "NVDEC is present: auto takes it";
  // Two sources: the fallback is said once for the run, and the profile names each one's decoder.
  auto r = test::run_cli(dir, {"run", "-m", test::kTinyModel, "-s", kSample, "-s", kSample, "--decode", "auto", "--max-frames", "3",
                               "-d", dir.file("d.jsonl"), "--profile-json", dir.file("p.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  size_t said = 0;
  for (size_t at = r.err.find("--decode auto: decoding on the CPU"); at != std::string::npos; at = r.err.find("--decode auto: decoding on the CPU", at + 1))
    ++said;
  EXPECT_EQ(said, 1u) << r.err;
  std::ifstream f(dir.file("p.json"));
  const auto profile = nlohmann::json::parse(f);
  ASSERT_EQ(profile["sources"].size(), 2u);
  for (const auto& s : profile["sources"]) EXPECT_EQ(s.value("decoder", "").rfind("cpu (h264", 0), 0u) << s.dump();
  // --decode cpu says nothing about NVDEC.
  auto cpu = test::run_cli(dir, {"run", "-m", test::kTinyModel, "-s", kSample, "--decode", "cpu", "--max-frames", "2", "-d", dir.file("c.jsonl")});
  ASSERT_EQ(cpu.code, 0) << cpu.err;
  EXPECT_EQ(cpu.err.find("NVDEC"), std::string::npos) << cpu.err;
}

TEST(NvdecSource, NvdecWhereItIsMissingIsOneLineAndExit3) {
  if (nvdec_here()) GTEST_SKIP() << "NVDEC is present here";
  NEED_H264_MP4();
  test::TempDir dir;
  auto r = test::run_cli(dir, {"run", "-m", test::kTinyModel, "-s", kSample, "--decode", "nvdec", "-d", dir.file("d.jsonl")});
  EXPECT_EQ(r.code, 3) << r.err;
  const std::string line = test::last_line(r.err);
  EXPECT_NE(line.find("--decode nvdec: " + kSample + ": NVDEC not available"), std::string::npos) << r.err;
  EXPECT_EQ(test::nonempty_lines(r.err).size(), 1u) << r.err;
}

TEST(NvdecSource, VersionSaysWhetherNvdecIsThere) {
  test::TempDir dir;
  test::SpawnOptions to_file;
  to_file.stdout_path = dir.file("version.txt");
  auto r = test::run_cli(dir, {"--version"}, to_file);
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(dir.file("version.txt"));
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  const size_t at = text.find("\nnvdec: ");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string verdict = text.substr(at + 8, 6);
  EXPECT_TRUE(verdict == "found," || verdict == "missin") << text;
}

// The GPU check's clips, made by its tool: Annex-B with B-frames (decode order is not display
// order), and reference frames equal to what FFmpeg's decoder (the source's CPU path) makes of them.
class NvdecClipOf : public testing::TestWithParam<const char*> {};

TEST_P(NvdecClipOf, TheReferenceFramesAreWhatTheCpuDecodes) {
  const std::string codec = GetParam();
  const int width = codec == "hevc" ? 320 : 640, height = codec == "hevc" ? 180 : 360;  // as gpu-pack.sh makes them
  test::TempDir dir;
  const std::string tool = clip_tool();
  if (!std::filesystem::exists(tool)) GTEST_SKIP() << tool << " is not built (streamdet_test_programs builds it)";
  const std::string out = dir.file("clip");
  const std::string cmd = tool + " --out " + out + " --codec " + codec + " --width " + std::to_string(width) + " --height " +
                          std::to_string(height) + " >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  auto clip = load_nvdec_clip(out);
  ASSERT_TRUE(clip) << clip.error().message;
  EXPECT_EQ(clip->codec, codec);
  EXPECT_EQ(clip->width, width);
  EXPECT_EQ(clip->height, height);
  ASSERT_EQ(clip->frames(), 48u);
  ASSERT_EQ(clip->packets.size(), 48u);
  std::vector<int64_t> decode_order;
  for (const auto& p : clip->packets) {
    decode_order.push_back(p.pts);
    EXPECT_FALSE(nal_types(clip->stream.data() + p.offset, p.size).empty()) << "packet at " << p.offset;
  }
  EXPECT_NE(decode_order, clip->display_pts) << "no B-frames: display order would not be tested";
  std::vector<int64_t> sorted = clip->display_pts;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, clip->display_pts);
  // The source's CPU path on the raw stream, frame by frame against the reference (as I420).
  SourceOptions so;
  so.decode = VideoDecode::kCpu;
  so.decode_threads = 1;
  auto src = FfmpegVideoSource::open(out + "/" + clip->stream_file(), so);
  ASSERT_TRUE(src) << src.error().message;
  Frame frame;
  cv::Mat ref;
  size_t i = 0;
  for (; i < clip->frames(); ++i) {
    auto got = (*src)->read(frame);
    ASSERT_TRUE(got && *got) << "frame " << i;
    ASSERT_EQ(frame.format, PixelFormat::kI420);
    nv12_to_i420(clip->reference_frame(i), clip->width, clip->width, clip->height, ref);
    ASSERT_EQ(frame.yuv.total(), ref.total());
    EXPECT_EQ(psnr_u8(frame.yuv.ptr<uint8_t>(), ref.ptr<uint8_t>(), ref.total()), kIdenticalPsnr) << "frame " << i;
  }
  auto end = (*src)->read(frame);
  EXPECT_TRUE(end && !*end);
}

INSTANTIATE_TEST_SUITE_P(NvdecClip, NvdecClipOf, testing::Values("h264", "hevc"));

// The GPU check's nvdec_e2e clip (gpu-pack.sh: 720p, --no-reference): its frames counted, no
// reference (which at 720p would be 1.4 MB a frame); a reference of the wrong size still refused.
TEST(NvdecClip, WithoutReferenceIsReadWithItsFramesAndNoReference) {
  test::TempDir dir;
  const std::string tool = clip_tool();
  if (!std::filesystem::exists(tool)) GTEST_SKIP() << tool << " is not built (streamdet_test_programs builds it)";
  const std::string out = dir.file("clip");
  ASSERT_EQ(std::system((tool + " --out " + out + " --width 1280 --height 720 --frames 4 --no-reference >/dev/null").c_str()), 0);
  EXPECT_EQ(std::filesystem::file_size(out + "/reference.nv12"), 0u);
  auto clip = load_nvdec_clip(out);
  ASSERT_TRUE(clip) << clip.error().message;
  EXPECT_FALSE(clip->has_reference());
  EXPECT_EQ(clip->width, 1280);
  EXPECT_EQ(clip->height, 720);
  EXPECT_EQ(clip->frames(), 4u);
  EXPECT_EQ(clip->packets.size(), 4u);
  std::ofstream(out + "/reference.nv12", std::ios::binary) << "not a frame";
  auto truncated = load_nvdec_clip(out);
  ASSERT_FALSE(truncated);
  EXPECT_NE(truncated.error().message.find("reference.nv12 holds 11 bytes"), std::string::npos) << truncated.error().message;
}

TEST(NvdecClip, PsnrOfKnownDifferences) {
  std::vector<uint8_t> a(1000, 100), b = a;
  EXPECT_EQ(psnr_u8(a.data(), b.data(), a.size()), kIdenticalPsnr);
  for (auto& x : b) x = 101;  // MSE 1: 20 log10(255)
  EXPECT_NEAR(psnr_u8(a.data(), b.data(), a.size()), 48.1308, 1e-3);
  b = a;
  b[0] = 110;  // MSE 100 / 1000 = 0.1
  EXPECT_NEAR(psnr_u8(a.data(), b.data(), a.size()), 10 * std::log10(255.0 * 255.0 / 0.1), 1e-9);
}

}  // namespace
}  // namespace sd
