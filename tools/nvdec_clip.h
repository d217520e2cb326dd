// The GPU check's NVDEC clip (docs/gpu.md, "NVDEC"): an H.264 (or HEVC) Annex-B stream made here
// with Debian's libx264 (libx265) (tools/make_nvdec_clip.cpp), its packets, and the frames FFmpeg's CPU decoder
// makes of it as NV12, the reference the GPU machine (no FFmpeg there) compares NVDEC with. Plain
// C++ and nlohmann::json only: the GPU check links it.
//   DIR/clip.h264       the stream (Annex-B; clip.hevc for HEVC)
//   DIR/clip.json       {"codec", "width", "height", "packets": [[offset, size, pts], ...] in
//                        decode order, "display_pts": [...] the frames' pts in display order}
//   DIR/reference.nv12  the CPU-decoded frames in display order, width x height x 3/2 bytes each;
//                       empty for a clip made with --no-reference (the nvdec_e2e clip: timing and
//                       its own downloads, no reference, which at 720p would be 1.4 MB a frame)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace sd {

struct NvdecClip {
  struct Packet {
    size_t offset = 0, size = 0;
    int64_t pts = 0;
  };
  std::string codec = "h264";  // or "hevc"
  int width = 0, height = 0;
  std::vector<uint8_t> stream;
  std::vector<Packet> packets;      // decode order
  std::vector<int64_t> display_pts;  // one per reference frame
  std::vector<uint8_t> reference;    // NV12 frames, display order; empty: none (has_reference)

  std::string stream_file() const { return "clip." + codec; }
  size_t frame_bytes() const { return static_cast<size_t>(width) * static_cast<size_t>(height) * 3 / 2; }
  size_t frames() const { return display_pts.size(); }
  bool has_reference() const { return !reference.empty(); }
  const uint8_t* reference_frame(size_t i) const { return reference.data() + i * frame_bytes(); }
};

Result<NvdecClip> load_nvdec_clip(const std::string& dir);
Status save_nvdec_clip(const NvdecClip& clip, const std::string& dir);

// PSNR in dB of two 8-bit images of n bytes; identical images give kIdenticalPsnr.
constexpr double kIdenticalPsnr = 100.0;
double psnr_u8(const uint8_t* a, const uint8_t* b, size_t n);

}  // namespace sd
