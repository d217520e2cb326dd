// The GPU check's NVDEC component (docs/gpu.md, "NVDEC"): the bundled H.264 clip decoded by NVDEC,
// each frame compared with the CPU-decoded reference (PSNR), the frames' order and PTS, and the
// decode rate. Never throws or aborts: a missing libnvcuvid, a GPU without NVDEC or a failing call
// is "pass": false with the reason, and the rest of the check goes on.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace sd {

// check.json's "nvdec" object: "pass", "error", "clip", "codec", "input", "frames_expected",
// "frames_decoded", "pts_in_order", "identical_frames", "psnr_db": {"min", "mean"},
// "create_ms", "decode_fps", "decoder".
nlohmann::json nvdec_check(const std::string& clip_dir, int device, int timed_passes);

}  // namespace sd
