// The cost of a frame arriving from the wire (issue 15's target: decode + parse of a 1280x720
// JPEG at quality 90 into a 640-wide model input, at most 2 ms of one core with the Redis read,
// write and acknowledgement): parsing the message, and decoding the JPEG at full size or at the
// DCT scale the model input allows (half size for a 640 input), each alone. The picture: gradients
// and filled boxes, blurred (edges and smooth areas, not noise: a JPEG of about 127 kB).
#include <benchmark/benchmark.h>

#include "bench_frames.h"
#include "transport/frame_codec.h"

namespace sd {
namespace {

const std::string& message_720p() { return bench::jpeg_frame_message_720p(); }

void BM_ParseFrameMessage720p(benchmark::State& state) {
  for (auto _ : state) {
    auto p = transport::parse_frame_message(message_720p(), 1ull << 26);
    benchmark::DoNotOptimize(p.header.data.data());
  }
  state.counters["jpeg_kB"] = static_cast<double>(message_720p().size()) / 1e3;
}
BENCHMARK(BM_ParseFrameMessage720p);

// arg: the model input width (0: decode at full size).
void BM_DecodeJpeg720p(benchmark::State& state) {
  const auto parsed = transport::parse_frame_message(message_720p(), 1ull << 26);
  transport::JpegDecoder dec;
  cv::Mat out;
  const int min_w = static_cast<int>(state.range(0));
  for (auto _ : state) {
    if (!dec.decode(parsed.header.data, {1280, 720}, min_w, 0, out)) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(out.data);
  }
  state.counters["width"] = out.cols;
}
BENCHMARK(BM_DecodeJpeg720p)->Arg(0)->Arg(640)->Arg(320)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sd
