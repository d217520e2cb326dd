// Helpers shared by tests: temporary folders and small generated media.
#pragma once

#include <filesystem>
#include <string>

#include <opencv2/core/mat.hpp>

namespace sd::test {

// A fresh directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// A frame whose pixels encode its index (uniform gray level 10*i plus the digits drawn).
cv::Mat numbered_frame(int index, cv::Size size = {160, 120});

// Writes `frames` numbered frames as MJPG .avi (deterministic, readable back by FFmpeg).
void write_numbered_avi(const std::string& path, int frames, double fps = 10, cv::Size size = {160, 120});

// Writes `frames` numbered frames as MPEG-4 part 2 .mp4 (decodes to 4:2:0 YUV, like H.264).
void write_numbered_mp4(const std::string& path, int frames, double fps = 10, cv::Size size = {160, 120});

// Destroys the JPEG start marker of frame `index` in an MJPG .avi so that frame cannot be decoded.
void corrupt_mjpeg_frame(const std::string& path, int index);

std::string read_file(const std::string& path);

// A TCP port on loopback that the kernel has just handed out, so free a moment ago (another
// process may take it before the test binds it: callers report that, never hang); 0 on failure.
int free_loopback_port();
size_t count_lines(const std::string& path);

}  // namespace sd::test
