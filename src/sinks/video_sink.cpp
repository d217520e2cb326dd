#include "sinks/video_sink.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <opencv2/imgproc.hpp>

namespace sd {
namespace {

int fourcc_for(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".avi") return cv::VideoWriter::fourcc('M', 'J', 'P', 'G');
  if (ext == ".mkv") return cv::VideoWriter::fourcc('X', 'V', 'I', 'D');
  return cv::VideoWriter::fourcc('m', 'p', '4', 'v');  // .mp4, .mov, .m4v
}

}  // namespace

Result<std::unique_ptr<VideoSink>> VideoSink::open(const std::string& path, double fps, int width, int height) {
  {
    std::ofstream probe(path, std::ios::binary | std::ios::trunc);
    if (!probe) return fail(ErrorCode::kOutput, "cannot write video to " + path + ": " + std::strerror(errno));
  }
  auto sink = std::unique_ptr<VideoSink>(new VideoSink());
  sink->path_ = path;
  sink->fps_ = fps > 0 ? fps : 25.0;
  if (width > 0 && height > 0) SD_TRY(sink->open_writer(cv::Size(width, height)));
  return sink;
}

Status VideoSink::open_writer(cv::Size size) {
  size_ = size;
  bool ok_open = false;
  try {
    ok_open = writer_.open(path_, cv::CAP_FFMPEG, fourcc_for(path_), fps_, size, true);
  } catch (const cv::Exception& e) {
    return fail(ErrorCode::kOutput, "cannot open video writer for " + path_ + ": " + e.what());
  }
  if (!ok_open || !writer_.isOpened())
    return fail(ErrorCode::kOutput, "cannot open video writer for " + path_ + " (unsupported container or codec?)");
  return ok();
}

Status VideoSink::write(const FrameResult& result) {
  if (finished_) return fail(ErrorCode::kOutput, "video " + path_ + " is already finalized");
  const cv::Mat& image = result.frame.bgr(converted_);  // an I420 frame not drawn on is converted here
  if (!writer_.isOpened()) SD_TRY(open_writer(image.size()));
  if (image.size() == size_) {
    writer_.write(image);
  } else {
    // Image folders may mix sizes: fit each frame to the video's size.
    cv::resize(image, resized_, size_);
    writer_.write(resized_);
  }
  ++frames_;
  return ok();
}

Status VideoSink::finish() {
  if (finished_) return ok();
  finished_ = true;
  writer_.release();  // writes the container trailer (moov atom for .mp4)
  return ok();
}

}  // namespace sd
