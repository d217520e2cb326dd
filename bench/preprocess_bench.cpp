// Preprocessing of one 720p frame into the network input, by the format the frame arrives in:
//   Bgr:         what OpenCV's capture delivers (its YUV->BGR conversion is BM_I420ToBgr).
//   I420:        what the FFmpeg source delivers: planes resized, YUV straight to float planes.
//   I420ViaBgr:  the old path for a decoded video: convert to BGR, then the BGR letterbox.
// Args: network width, height (640x640 square; 1280x736 stride-aligned, no scaling).
#include <benchmark/benchmark.h>

#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "preprocess/letterbox.h"

namespace sd {
namespace {

cv::Mat random_bgr_720p() {
  cv::Mat img(720, 1280, CV_8UC3);
  cv::randu(img, 0, 256);
  cv::GaussianBlur(img, img, cv::Size(5, 5), 0);  // camera-like, not pure noise
  return img;
}

cv::Mat random_i420_720p() {
  cv::Mat i420;
  cv::cvtColor(random_bgr_720p(), i420, cv::COLOR_BGR2YUV_I420);
  return i420;
}

void BM_Preprocess_Bgr720(benchmark::State& state) {
  const cv::Mat bgr = random_bgr_720p();
  const cv::Size dst(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  std::vector<float> chw(3 * static_cast<size_t>(dst.area()));
  PreprocessSpec spec;
  PreprocessScratch scratch;
  for (auto _ : state) benchmark::DoNotOptimize(preprocess_frame(bgr, dst, spec, chw.data(), scratch));
}
BENCHMARK(BM_Preprocess_Bgr720)->Args({640, 640})->Args({1280, 736})->Unit(benchmark::kMicrosecond);

void BM_Preprocess_I420_720(benchmark::State& state) {
  const cv::Mat i420 = random_i420_720p();
  const cv::Size dst(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  std::vector<float> chw(3 * static_cast<size_t>(dst.area()));
  PreprocessSpec spec;
  PreprocessScratch scratch;
  for (auto _ : state) benchmark::DoNotOptimize(preprocess_i420(i420, dst, spec, chw.data(), scratch));
}
BENCHMARK(BM_Preprocess_I420_720)->Args({640, 640})->Args({1280, 736})->Unit(benchmark::kMicrosecond);

void BM_Preprocess_I420ViaBgr_720(benchmark::State& state) {
  const cv::Mat i420 = random_i420_720p();
  cv::Mat bgr;
  const cv::Size dst(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  std::vector<float> chw(3 * static_cast<size_t>(dst.area()));
  PreprocessSpec spec;
  PreprocessScratch scratch;
  for (auto _ : state) {
    cv::cvtColor(i420, bgr, cv::COLOR_YUV2BGR_I420);
    benchmark::DoNotOptimize(preprocess_frame(bgr, dst, spec, chw.data(), scratch));
  }
}
BENCHMARK(BM_Preprocess_I420ViaBgr_720)->Args({640, 640})->Args({1280, 736})->Unit(benchmark::kMicrosecond);

void BM_I420ToBgr_720(benchmark::State& state) {
  const cv::Mat i420 = random_i420_720p();
  cv::Mat bgr;
  for (auto _ : state) {
    cv::cvtColor(i420, bgr, cv::COLOR_YUV2BGR_I420);
    benchmark::DoNotOptimize(bgr.data);
  }
}
BENCHMARK(BM_I420ToBgr_720)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sd
