// Picks the kind of source from the spec string the user passed to --source.
#include <glob.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/uri_redaction.h"
#include "sources/ffmpeg_video_source.h"
#include "sources/gstreamer_source.h"
#include "sources/image_source.h"
#include "sources/redis_source.h"
#include "sources/source.h"
#include "sources/supervised_source.h"
#include "sources/synthetic_source.h"
#include "sources/video_capture_source.h"

namespace sd {
namespace fs = std::filesystem;

const char* source_kind_name(SourceKind kind) {
  switch (kind) {
    case SourceKind::kVideoFile: return "video file";
    case SourceKind::kImages: return "images";
    case SourceKind::kCamera: return "camera";
    case SourceKind::kGStreamer: return "GStreamer pipeline";
    case SourceKind::kStream: return "stream";
    case SourceKind::kRedis: return "Redis stream";
  }
  return "source";
}

namespace {

bool is_url(const std::string& s) {
  for (const char* scheme : {"rtsp://", "rtsps://", "http://", "https://", "rtmp://", "udp://", "tcp://", "srt://"})
    if (s.rfind(scheme, 0) == 0) return true;
  return false;
}

std::vector<std::string> expand_glob(const std::string& pattern) {
  std::vector<std::string> files;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i)
      if (fs::is_regular_file(g.gl_pathv[i])) files.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> images_in_folder(const std::string& folder) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (entry.is_regular_file() && has_image_extension(entry.path().string())) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

bool is_glob(const std::string& spec) { return spec.find_first_of("*?[") != std::string::npos; }

// Every kind but the two that never go through the supervisor: synthetic clips (they end when
// they end) and Redis streams (they reconnect on their own, transport/redis_reconnect.h).
Result<std::unique_ptr<Source>> open_plain_source(const std::string& spec, const SourceOptions& options) {
  if (spec.find_first_not_of("0123456789") == std::string::npos || spec.rfind("/dev/video", 0) == 0)
    return VideoCaptureSource::open(spec, options);
  if (spec.find('!') != std::string::npos && spec.find("appsink") != std::string::npos) return GStreamerSource::open(spec, options);
  if (is_url(spec)) return FfmpegVideoSource::open_stream(spec, options);
  std::error_code ec;
  if (fs::is_directory(spec, ec)) return ImageSource::open(spec, images_in_folder(spec), options);
  if (!fs::exists(spec, ec)) {
    if (is_glob(spec)) {
      auto files = expand_glob(spec);
      if (files.empty()) return fail(ErrorCode::kSource, "source pattern " + without_password(spec) + " matches no file");
      return ImageSource::open(spec, std::move(files), options);
    }
    if (spec.find('!') != std::string::npos)
      return fail(ErrorCode::kSource, "source '" + without_password(spec) + "' is neither a file nor a GStreamer pipeline (a pipeline must end in appsink)");
    return fail(ErrorCode::kSource, "source " + without_password(spec) + " does not exist");
  }
  if (has_image_extension(spec)) return ImageSource::open(spec, {spec}, options);
  return FfmpegVideoSource::open(spec, options);
}

}  // namespace

std::vector<std::string> files_read_by_source(const std::string& spec) {
  if (spec.empty() || is_synthetic_spec(spec) || is_redis_spec(spec) || is_url(spec)) return {};
  std::error_code ec;
  if (fs::is_directory(spec, ec)) return images_in_folder(spec);
  if (fs::is_regular_file(spec, ec)) return {spec};
  if (!fs::exists(spec, ec) && is_glob(spec)) return expand_glob(spec);
  return {};  // a camera, a GStreamer pipeline, or nothing there (open_source says so)
}

Result<std::unique_ptr<Source>> open_source(const std::string& spec, const SourceOptions& options) {
  if (spec.empty()) return fail(ErrorCode::kSource, "empty --source");
  if (is_synthetic_spec(spec)) return SyntheticSource::open(spec, options);
  if (is_redis_spec(spec)) return open_redis_source(spec, options);
  SD_ASSIGN_OR_RETURN(auto source, open_plain_source(spec, options));
  // Files and image folders end when they end; live sources are reopened when they go down.
  if (!options.reconnect || !source->info().live) return source;
  return supervise(std::move(source), [spec, options] { return open_plain_source(spec, options); }, options);
}

}  // namespace sd
