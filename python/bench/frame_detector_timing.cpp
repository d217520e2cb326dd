// The C++ side of the binding's overhead figure (python/bench/overhead.py): times
// FrameDetector::detect, the call streamdet.Detector's det(frame) wraps, on a uniform gray frame.
//   streamdet_frame_detector_timing MODEL WIDTH HEIGHT INPUT_SIZE CALLS
// Prints the median and mean microseconds per call.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "runtime/frame_detector.h"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s MODEL WIDTH HEIGHT INPUT_SIZE CALLS\n", argv[0]);
    return 2;
  }
  sd::ModelOptions options;
  options.model = argv[1];
  options.input_size = argv[4];
  options.threads = 1;
  auto detector = sd::FrameDetector::load(options, false);
  if (!detector) {
    std::fprintf(stderr, "streamdet: error: %s\n", detector.error().message.c_str());
    return 3;
  }
  const cv::Mat frame(std::stoi(argv[3]), std::stoi(argv[2]), CV_8UC3, cv::Scalar(114, 114, 114));
  const int calls = std::stoi(argv[5]);
  std::vector<double> us;
  us.reserve(static_cast<size_t>(calls));
  for (int i = 0; i < calls + 20; ++i) {  // 20 warm-up calls
    const auto t0 = std::chrono::steady_clock::now();
    auto r = (*detector)->detect(frame);
    const auto t1 = std::chrono::steady_clock::now();
    if (!r) {
      std::fprintf(stderr, "streamdet: error: %s\n", r.error().message.c_str());
      return 1;
    }
    if (i >= 20) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  double mean = 0;
  for (double v : us) mean += v;
  mean /= static_cast<double>(us.size());
  std::nth_element(us.begin(), us.begin() + static_cast<long>(us.size() / 2), us.end());
  std::printf("median_us %.2f mean_us %.2f\n", us[us.size() / 2], mean);
  return 0;
}
