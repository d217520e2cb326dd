#include "test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

namespace sd::test {

TempDir::TempDir() {
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto p = std::filesystem::temp_directory_path() / ("streamdet_test_" + std::to_string(rd()));
    if (std::filesystem::create_directory(p)) {
      path_ = p;
      return;
    }
  }
  throw std::runtime_error("cannot create a temp dir");
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

cv::Mat numbered_frame(int index, cv::Size size) {
  cv::Mat img(size, CV_8UC3, cv::Scalar::all((index * 10) % 250));
  cv::putText(img, std::to_string(index), {size.width / 3, size.height / 2}, cv::FONT_HERSHEY_SIMPLEX, 1.0,
              cv::Scalar(255, 255, 255), 2);
  return img;
}

void write_numbered_avi(const std::string& path, int frames, double fps, cv::Size size) {
  cv::VideoWriter w(path, cv::CAP_FFMPEG, cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), fps, size, true);
  if (!w.isOpened()) throw std::runtime_error("cannot write " + path);
  for (int i = 0; i < frames; ++i) w.write(numbered_frame(i, size));
}

void write_numbered_mp4(const std::string& path, int frames, double fps, cv::Size size) {
  cv::VideoWriter w(path, cv::CAP_FFMPEG, cv::VideoWriter::fourcc('m', 'p', '4', 'v'), fps, size, true);
  if (!w.isOpened()) throw std::runtime_error("cannot write " + path);
  for (int i = 0; i < frames; ++i) w.write(numbered_frame(i, size));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t count_lines(const std::string& path) {
  std::string data = read_file(path);
  size_t n = 0;
  for (char c : data) n += c == '\n';
  return n;
}

void corrupt_mjpeg_frame(const std::string& path, int index) {
  std::string data = read_file(path);
  int seen = 0;
  for (size_t i = 0; i + 1 < data.size(); ++i) {
    if (static_cast<unsigned char>(data[i]) == 0xFF && static_cast<unsigned char>(data[i + 1]) == 0xD8) {
      if (seen++ == index) {
        for (size_t j = i; j < std::min(data.size(), i + 300); ++j) data[j] = 0x5A;
        std::ofstream(path, std::ios::binary) << data;
        return;
      }
    }
  }
  throw std::runtime_error("frame not found in " + path);
}

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

}  // namespace sd::test
