#include "sources/image_source.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <opencv2/imgcodecs.hpp>

#include "core/uri_redaction.h"
#include "sources/png_check.h"

namespace sd {

namespace {

// The image, or empty with `why` set. A PNG is checked first and decoded from memory: libpng,
// left to itself, prints its own line for a damaged one (png_check.h).
cv::Mat decode_image(const std::string& path, std::string& why) {
  why.clear();
  try {
    std::ifstream in(path, std::ios::binary);
    std::string head(8, '\0');
    const bool png = in.read(head.data(), static_cast<std::streamsize>(head.size())) && has_png_signature(head);
    std::error_code ec;
    if (!png || std::filesystem::file_size(path, ec) > static_cast<uintmax_t>(INT32_MAX)) return cv::imread(path, cv::IMREAD_COLOR);
    std::string bytes = head + std::string(std::istreambuf_iterator<char>(in), {});
    if (auto damage = png_damage(bytes)) {
      why = *damage;
      return {};
    }
    return cv::imdecode(cv::Mat(1, static_cast<int>(bytes.size()), CV_8UC1, bytes.data()), cv::IMREAD_COLOR);
  } catch (const cv::Exception&) {
    return {};
  }
}

}  // namespace

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
  src->info_.uri = without_password(spec);
  src->info_.kind = SourceKind::kImages;
  src->info_.frame_count = static_cast<int64_t>(src->files_.size());
  // Size of the first readable image, for the video writer.
  std::string why;
  for (const auto& f : src->files_) {
    cv::Mat first = decode_image(f, why);
    if (!first.empty()) {
      src->info_.width = first.cols;
      src->info_.height = first.rows;
      break;
    }
  }
  if (src->info_.width == 0)
    return fail(ErrorCode::kSource, src->files_.size() == 1 ? "image " + src->info_.uri + " could not be decoded" + (why.empty() ? "" : ": " + why)
                                                            : "source " + src->info_.uri + " has no decodable image");
  return std::unique_ptr<Source>(std::move(src));
}

Result<bool> ImageSource::read(Frame& frame) {
  if (next_ >= files_.size()) return false;
  const std::string& path = files_[next_];
  frame.index = static_cast<int64_t>(next_++);
  frame.source_id = source_id_;
  frame.timestamp_ms = 0;
  frame.capture_time = Clock::now();
  frame.set_bgr();
  std::string why;
  frame.image = decode_image(path, why);
  if (frame.image.empty())
    return fail(ErrorCode::kCorruptFrame, "image " + path + " could not be decoded" + (why.empty() ? "" : ": " + why));
  return true;
}

}  // namespace sd
