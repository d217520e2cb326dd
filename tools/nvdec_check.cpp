#include "nvdec_check.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "engine/native/cuda/nvdec_decoder.h"
#include "nvdec_clip.h"

namespace sd {

using native::cuda::NvdecCodec;
using native::cuda::NvdecDecoder;
using native::cuda::NvdecFrame;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Every packet of the clip through a fresh decoder, then the end of the stream; each frame as it
// comes is handed to `take`. Returns the seconds from the first packet to the last frame.
template <typename Take>
Result<double> decode_clip(const NvdecClip& clip, int device, Take take, double* create_ms) {
  const auto t0 = Clock::now();
  SD_ASSIGN_OR_RETURN(auto decoder, NvdecDecoder::create(clip.codec == "hevc" ? NvdecCodec::kHevc : NvdecCodec::kH264, device));
  if (create_ms) *create_ms = ms_since(t0);
  const auto t1 = Clock::now();
  auto drain = [&]() -> Status {
    while (auto f = decoder->next()) SD_TRY(take(*f, *decoder));
    return ok();
  };
  for (const auto& p : clip.packets) {
    SD_TRY(decoder->decode(clip.stream.data() + p.offset, p.size, p.pts));
    SD_TRY(drain());
  }
  SD_TRY(decoder->flush());
  SD_TRY(drain());
  return ms_since(t1) / 1000.0;
}

}  // namespace

nlohmann::json nvdec_check(const std::string& clip_dir, int device, int timed_passes) {
  nlohmann::json row{{"pass", false}, {"error", nullptr}, {"clip", clip_dir}};
  auto clip = load_nvdec_clip(clip_dir);
  if (!clip) {
    row["error"] = clip.error().message;
    return row;
  }
  row.update({{"codec", clip->codec},
              {"input", std::to_string(clip->width) + "x" + std::to_string(clip->height)},
              {"frames_expected", clip->frames()},
              {"frames_decoded", 0}});
  if (!clip->has_reference()) {
    row["error"] = clip_dir + ": no reference frames (made with --no-reference): nothing to compare NVDEC with";
    return row;
  }
  // Correctness: every frame against the reference, in display order with its PTS.
  std::vector<uint8_t> host(clip->frame_bytes());
  std::vector<double> psnr;
  std::vector<int64_t> pts;
  std::string mismatch;
  double create_ms = 0;
  std::string decoder_text;
  auto compare = [&](const NvdecFrame& f, const NvdecDecoder& d) -> Status {
    decoder_text = d.describe();
    const size_t i = pts.size();
    pts.push_back(f.pts());
    if (f.width() != clip->width || f.height() != clip->height) {
      if (mismatch.empty())
        mismatch = "frame " + std::to_string(i) + " is " + std::to_string(f.width()) + "x" + std::to_string(f.height()) + ", expected " +
                   std::to_string(clip->width) + "x" + std::to_string(clip->height);
      return ok();
    }
    SD_TRY(f.download_nv12(host.data(), clip->width));
    if (i < clip->frames()) psnr.push_back(psnr_u8(host.data(), clip->reference_frame(i), clip->frame_bytes()));
    return ok();
  };
  auto decoded = decode_clip(*clip, device, compare, &create_ms);
  row["frames_decoded"] = pts.size();
  if (!decoder_text.empty()) row["decoder"] = decoder_text;
  if (!decoded) {
    row["error"] = decoded.error().message;
    return row;
  }
  row["create_ms"] = create_ms;
  const bool in_order = pts == clip->display_pts;
  row["pts_in_order"] = in_order;
  const double min_psnr = psnr.empty() ? 0 : *std::min_element(psnr.begin(), psnr.end());
  double mean = 0;
  for (double p : psnr) mean += p;
  if (!psnr.empty()) mean /= static_cast<double>(psnr.size());
  row["psnr_db"] = {{"min", min_psnr}, {"mean", mean}};
  row["identical_frames"] = std::count(psnr.begin(), psnr.end(), kIdenticalPsnr);
  // Speed: the clip again through fresh decoders, copies out included, no download; the median.
  std::vector<double> fps;
  for (int pass = 0; pass < timed_passes; ++pass) {
    size_t n = 0;
    auto seconds = decode_clip(*clip, device, [&](const NvdecFrame&, const NvdecDecoder&) { ++n; return ok(); }, nullptr);
    if (!seconds) {
      row["error"] = "timed pass: " + seconds.error().message;
      return row;
    }
    if (*seconds > 0) fps.push_back(static_cast<double>(n) / *seconds);
  }
  if (!fps.empty()) {
    std::sort(fps.begin(), fps.end());
    row["decode_fps"] = fps[fps.size() / 2];
  }
  // H.264 and HEVC decoding is exact: NVDEC's frames are FFmpeg's, bit for bit; 50 dB leaves room
  // for nothing but a rounding difference in a post-processing step.
  std::string error;
  if (!mismatch.empty())
    error = mismatch;
  else if (pts.size() != clip->frames())
    error = std::to_string(pts.size()) + " frames decoded, expected " + std::to_string(clip->frames());
  else if (!in_order)
    error = "frames out of display order (their pts differ from the reference's)";
  else if (min_psnr < 50)
    error = "PSNR against the CPU decoder down to " + std::to_string(min_psnr) + " dB (at least 50 expected)";
  row["pass"] = error.empty();
  if (!error.empty()) row["error"] = error;
  return row;
}

}  // namespace sd
