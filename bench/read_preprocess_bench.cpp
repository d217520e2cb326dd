// Reading and preprocessing one frame of a video file, the reader + preprocess threads' whole
// job, per frame, in process CPU time (decoder threads included):
//   OpenCv:        cv::VideoCapture (FFmpeg, BGR frames; its decoder threads = cores), BGR letterbox
//   Ffmpeg/T:      FfmpegVideoSource with T decoder threads (I420 frames), I420 letterbox
// Network input 640x640. The clip: $STREAMDET_BENCH_CLIP (e.g. a 720p H.264 file), else a 720p
// MPEG-4 part 2 clip written once into the temp dir (cheaper to decode than H.264; the
// conversion and preprocessing costs are the same).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <vector>

#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include "preprocess/letterbox.h"
#include "sources/ffmpeg_video_source.h"

namespace sd {
namespace {

std::string bench_clip() {
  if (const char* env = std::getenv("STREAMDET_BENCH_CLIP")) return env;
  static const std::string path = (std::filesystem::temp_directory_path() / "streamdet_bench_720p.mp4").string();
  if (!std::filesystem::exists(path)) {
    cv::VideoWriter w(path, cv::CAP_FFMPEG, cv::VideoWriter::fourcc('m', 'p', '4', 'v'), 30, cv::Size(1280, 720));
    cv::Mat img(720, 1280, CV_8UC3);
    for (int i = 0; i < 120; ++i) {
      cv::randu(img, 0, 256);
      cv::GaussianBlur(img, img, cv::Size(9, 9), 0);
      cv::circle(img, {100 + 8 * i, 360}, 80, cv::Scalar(40, 200, 90), -1);
      w.write(img);
    }
  }
  return path;
}

const cv::Size kNet(640, 640);

void BM_ReadPreprocess_OpenCv(benchmark::State& state) {
  const std::string clip = bench_clip();
  auto cap = std::make_unique<cv::VideoCapture>(clip, cv::CAP_FFMPEG);
  cv::Mat bgr;
  std::vector<float> chw(3 * static_cast<size_t>(kNet.area()));
  PreprocessSpec spec;
  PreprocessScratch scratch;
  for (auto _ : state) {
    if (!cap->read(bgr)) {
      state.PauseTiming();
      cap = std::make_unique<cv::VideoCapture>(clip, cv::CAP_FFMPEG);
      cap->read(bgr);
      state.ResumeTiming();
    }
    benchmark::DoNotOptimize(preprocess_frame(bgr, kNet, spec, chw.data(), scratch));
  }
}
BENCHMARK(BM_ReadPreprocess_OpenCv)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

void BM_ReadPreprocess_Ffmpeg(benchmark::State& state) {
  const std::string clip = bench_clip();
  SourceOptions options;
  options.decode_threads = static_cast<int>(state.range(0));
  auto open = [&] {
    auto s = FfmpegVideoSource::open(clip, options);
    if (!s) state.SkipWithError(s.error().message.c_str());
    return s ? std::move(*s) : nullptr;
  };
  std::unique_ptr<Source> src = open();
  if (!src) return;
  Frame frame;
  std::vector<float> chw(3 * static_cast<size_t>(kNet.area()));
  PreprocessSpec spec;
  PreprocessScratch scratch;
  for (auto _ : state) {
    auto got = src->read(frame);
    if (!got || !*got) {
      state.PauseTiming();
      src = open();
      if (!src || !*src->read(frame)) break;
      state.ResumeTiming();
    }
    benchmark::DoNotOptimize(preprocess_frame(frame, kNet, spec, chw.data(), scratch));
  }
}
BENCHMARK(BM_ReadPreprocess_Ffmpeg)->Arg(1)->Arg(2)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sd
