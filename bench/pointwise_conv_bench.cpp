// Our 1x1 convolution (cpu/pointwise_conv.h) on YOLOv8n's 1x1 shapes at 640, channels-last, with
// bias and SiLU in the epilogue as the engine runs them. Args: pixels, input channels, output
// channels, threads (2: the setting; 1 for tuning on a busy machine), ISA variant (1 AVX2,
// 2 AVX-512, 3 the bf16 variant on a bf16 source with a bf16 result, as --precision bf16 runs
// YOLOv8n's; skipped where the processor cannot run it).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <random>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/bf16_convert.h"
#include "engine/native/cpu/pointwise_conv.h"

namespace sd::native::ops {
namespace {

void BM_PointwiseConv(benchmark::State& state) {
  const int64_t pixels = state.range(0), c = state.range(1), oc = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  const bool bf16 = state.range(4) == 3;
  const cpu::Isa isa = bf16 ? cpu::Isa::kAvx512Bf16 : state.range(4) == 2 ? cpu::Isa::kAvx512 : cpu::Isa::kAvx2;
  if (isa > cpu::detected_isa()) {
    state.SkipWithError("this processor cannot run this ISA variant");
    return;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> w(static_cast<size_t>(oc * c)), b(static_cast<size_t>(oc)), x(static_cast<size_t>(pixels * c));
  for (auto* v : {&w, &b, &x})
    for (auto& f : *v) f = u(rng);
  std::vector<float> y(static_cast<size_t>(pixels * oc));
  omp_set_num_threads(threads);
  const PointwiseConv conv({pixels, c, oc}, w.data(), b.data(), {{WinoPostKind::kSilu}}, isa, bf16);
  state.SetLabel(conv.name());
  std::vector<uint16_t> xb(bf16 ? x.size() : 0), yb(bf16 ? y.size() : 0);
  for (size_t i = 0; i < xb.size(); ++i) xb[i] = float_to_bf16_rne(x[i]);
  for (auto _ : state) {
    if (bf16)
      conv.run_bf16(xb.data(), nullptr, yb.data(), nullptr, threads);
    else
      conv.run(x.data(), y.data(), nullptr, threads);
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(yb.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(static_cast<double>(2 * pixels * c * oc), benchmark::Counter::kIsIterationInvariantRate);
}
// YOLOv8n's 1x1 convolutions at 640: b2 (160x160), b4/h15 (80x80), b6/h12/h18 (40x40), b8/b9/h21
// (20x20), and the head's last (80 outputs: panels of 48 + 32).
BENCHMARK(BM_PointwiseConv)
    ->ArgsProduct({{25600}, {32, 48}, {32}, {1, 2}, {2, 3}})
    ->ArgsProduct({{6400}, {64, 128, 192}, {64}, {1, 2}, {2, 3}})
    ->ArgsProduct({{6400}, {80}, {80}, {1, 2}, {2, 3}})
    ->ArgsProduct({{1600}, {192, 384}, {128}, {1, 2}, {2, 3}})
    ->ArgsProduct({{400}, {384, 512}, {256}, {1, 2}, {2, 3}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sd::native::ops
