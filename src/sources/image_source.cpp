#include "sources/image_source.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <opencv2/imgcodecs.hpp>

namespace sd {

bool has_image_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  static const char* kExts[] = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp", ".ppm", ".pgm", ".jp2"};
  return std::any_of(std::begin(kExts), std::end(kExts), [&](const char* e) { return ext == e; });
}

Result<std::unique_ptr<Source>> ImageSource::open(const std::string& spec, std::vector<std::string> files,
                                                  const SourceOptions& options) {
  if (files.empty()) return fail(ErrorCode::kSource, "source " + spec + " contains no image files");
  auto src = std::unique_ptr<ImageSource>(new ImageSource());
  src->files_ = std::move(files);
  src->source_id_ = options.source_id;
  src->info_.uri = spec;
  src->info_.kind = SourceKind::kImages;
  src->info_.frame_count = static_cast<int64_t>(src->files_.size());
  // Size of the first readable image, for the video writer.
  for (const auto& f : src->files_) {
    cv::Mat first = cv::imread(f, cv::IMREAD_COLOR);
    if (!first.empty()) {
      src->info_.width = first.cols;
      src->info_.height = first.rows;
      break;
    }
  }
  if (src->info_.width == 0)
    return fail(ErrorCode::kSource, src->files_.size() == 1 ? "image " + spec + " could not be decoded"
                                                            : "source " + spec + " has no decodable image");
  return std::unique_ptr<Source>(std::move(src));
}

Result<bool> ImageSource::read(Frame& frame) {
  if (next_ >= files_.size()) return false;
  const std::string& path = files_[next_];
  frame.index = static_cast<int64_t>(next_++);
  frame.source_id = source_id_;
  frame.timestamp_ms = 0;
  frame.capture_time = Clock::now();
  try {
    frame.set_bgr();
    frame.image = cv::imread(path, cv::IMREAD_COLOR);
  } catch (const cv::Exception&) {
    frame.image.release();
  }
  if (frame.image.empty())
    return fail(ErrorCode::kCorruptFrame, "image " + path + " could not be decoded");
  return true;
}

}  // namespace sd
