// The stem convolution kernel (cpu/stem_conv.cpp) alone: an RGB image into the first layer's
// channels, 3x3 stride 2, NCHW in, NHWC out, SiLU (third arg 1) over each finished row as the
// engine runs it (cpu/activation_kernels.h). Args: input side, output channels, SiLU, and the
// ISA variant of both kernels (0 baseline, 1 AVX2, 2 AVX-512: src/core/cpu_isa.h; skipped where
// the processor cannot run it).
// (The tiny model's stem: 256, 8; YOLOv8n's: 640, 16.)
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/activation_kernels.h"
#include "engine/native/cpu/stem_conv.h"
#include "engine/native/cpu/stem_conv_bf16.h"

namespace sd::native::ops {
namespace {

void BM_StemConv3x3s2(benchmark::State& state) {
  const int64_t side = state.range(0), oc = state.range(1);
  const auto isa = static_cast<cpu::Isa>(state.range(3));
  if (isa > cpu::detected_isa()) {
    state.SkipWithError("this processor cannot run this ISA variant");
    return;
  }
  state.SetLabel(cpu::isa_name(isa));
  const StemConvGeometry g{1, 3, side, side, oc, 3, 3, side / 2, side / 2, 2, 2, 1, 1};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> w(static_cast<size_t>(oc * 27)), b(static_cast<size_t>(oc)), x(static_cast<size_t>(3 * side * side));
  for (auto* v : {&w, &b, &x})
    for (auto& f : *v) f = u(rng);
  std::vector<float> y(static_cast<size_t>(oc * g.oh * g.ow));
  StemConv conv(g, w.data(), b.data());
  std::function<void(float*, int64_t)> silu_rows;
  if (state.range(2)) silu_rows = [isa](float* rows, int64_t count) { silu_isa(isa, rows, rows, count); };
  for (auto _ : state) {
    conv.run_isa(isa, x.data(), false, y.data(), 1, silu_rows);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(static_cast<double>(2 * 27 * oc * g.oh * g.ow), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_StemConv3x3s2)
    ->ArgsProduct({{256}, {8, 16}, {0, 1}, {0, 1, 2}})
    ->ArgsProduct({{640}, {16}, {0, 1}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond);

// The bf16 stem (cpu/stem_conv_bf16.h, --precision bf16 on AVX512_BF16) on YOLOv8n's 640 stem:
// SiLU in its epilogue, the result in bf16 as the engine keeps it. Args: input side, output
// channels, threads, the source evicted from the caches before each run (1) or warm (0).
void BM_StemConv3x3s2Bf16(benchmark::State& state) {
  const int64_t side = state.range(0), oc = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  const bool evict = state.range(3) != 0;
  const StemConvGeometry g{1, 3, side, side, oc, 3, 3, side / 2, side / 2, 2, 2, 1, 1};
  const std::vector<WinoPost> posts{{WinoPostKind::kSilu}};
  if (!StemConvBf16::applies(g, false, posts)) {
    state.SkipWithError("this processor has no AVX512_BF16");
    return;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> w(static_cast<size_t>(oc * 27)), b(static_cast<size_t>(oc)), x(static_cast<size_t>(3 * side * side));
  for (auto* v : {&w, &b, &x})
    for (auto& f : *v) f = u(rng);
  std::vector<uint16_t> y(static_cast<size_t>(oc * g.oh * g.ow));
  std::vector<float> other(evict ? 8u << 20 : 0);  // 32 MiB written between runs
  const StemConvBf16 conv(g, w.data(), b.data(), posts);
  state.SetLabel(conv.name());
  for (auto _ : state) {
    if (evict) {
      state.PauseTiming();
      for (float& f : other) f += 1;
      benchmark::DoNotOptimize(other.data());
      state.ResumeTiming();
    }
    conv.run(x.data(), nullptr, y.data(), threads);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(static_cast<double>(2 * 27 * oc * g.oh * g.ow), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_StemConv3x3s2Bf16)->ArgsProduct({{640}, {16}, {1, 2}, {0, 1}})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sd::native::ops
