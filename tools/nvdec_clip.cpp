#include "nvdec_clip.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

namespace sd {

namespace {
Result<std::vector<uint8_t>> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return fail(ErrorCode::kSource, "cannot read " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}
Status write_all(const std::string& path, const void* data, size_t n) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!f) return fail(ErrorCode::kOutput, "cannot write " + path);
  return ok();
}
}  // namespace

Result<NvdecClip> load_nvdec_clip(const std::string& dir) {
  NvdecClip clip;
  SD_ASSIGN_OR_RETURN(auto index_bytes, read_all(dir + "/clip.json"));
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(index_bytes.begin(), index_bytes.end());
    clip.codec = index.at("codec").get<std::string>();
    clip.width = index.at("width").get<int>();
    clip.height = index.at("height").get<int>();
    for (const auto& p : index.at("packets")) clip.packets.push_back({p.at(0).get<size_t>(), p.at(1).get<size_t>(), p.at(2).get<int64_t>()});
    clip.display_pts = index.at("display_pts").get<std::vector<int64_t>>();
  } catch (const std::exception& e) {
    return fail(ErrorCode::kSource, dir + "/clip.json: " + e.what());
  }
  if (clip.codec != "h264" && clip.codec != "hevc") return fail(ErrorCode::kSource, dir + "/clip.json: codec " + clip.codec + " (h264 or hevc)");
  SD_ASSIGN_OR_RETURN(clip.stream, read_all(dir + "/" + clip.stream_file()));
  SD_ASSIGN_OR_RETURN(clip.reference, read_all(dir + "/reference.nv12"));
  if (clip.width <= 0 || clip.height <= 0 || clip.width % 2 || clip.height % 2)
    return fail(ErrorCode::kSource, dir + "/clip.json: size " + std::to_string(clip.width) + "x" + std::to_string(clip.height));
  if (!clip.reference.empty() && clip.reference.size() != clip.frames() * clip.frame_bytes())
    return fail(ErrorCode::kSource, dir + "/reference.nv12 holds " + std::to_string(clip.reference.size()) + " bytes, expected " +
                                        std::to_string(clip.frames()) + " frames of " + std::to_string(clip.frame_bytes()));
  for (const auto& p : clip.packets)
    if (p.offset + p.size > clip.stream.size()) return fail(ErrorCode::kSource, dir + "/clip.json: a packet past the end of " + clip.stream_file());
  return clip;
}

Status save_nvdec_clip(const NvdecClip& clip, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  nlohmann::json index{{"codec", clip.codec}, {"width", clip.width}, {"height", clip.height}, {"display_pts", clip.display_pts}};
  index["packets"] = nlohmann::json::array();
  for (const auto& p : clip.packets) index["packets"].push_back({p.offset, p.size, p.pts});
  const std::string text = index.dump() + "\n";
  SD_TRY(write_all(dir + "/clip.json", text.data(), text.size()));
  SD_TRY(write_all(dir + "/" + clip.stream_file(), clip.stream.data(), clip.stream.size()));
  return write_all(dir + "/reference.nv12", clip.reference.data(), clip.reference.size());
}

double psnr_u8(const uint8_t* a, const uint8_t* b, size_t n) {
  double sse = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    sse += d * d;
  }
  if (sse == 0 || n == 0) return kIdenticalPsnr;
  return std::min(kIdenticalPsnr, 10.0 * std::log10(255.0 * 255.0 * static_cast<double>(n) / sse));
}

}  // namespace sd
