// SiLU over a convolution output that is in cache (the case in a network: the activation runs
// right after the layer that wrote it): the vector kernel (cpu/activation_kernels.h) against the
// portable fast_sigmoid loop it replaces. Arg: floats (65536 = the tiny model's 64x64x16 layers,
// 256 KiB, in L2).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/activation_kernels.h"
#include "engine/native/cpu/fast_math.h"

namespace sd::native::ops {
namespace {

std::vector<float> activations(int64_t n) {
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0, 3);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = d(rng);
  return x;
}

// Second arg: the ISA variant (0 baseline, 1 AVX2, 2 AVX-512: src/core/cpu_isa.h; skipped where
// the processor cannot run it).
void BM_SiluKernel(benchmark::State& state) {
  const auto isa = static_cast<cpu::Isa>(state.range(1));
  if (isa > cpu::detected_isa()) {
    state.SkipWithError("this processor cannot run this ISA variant");
    return;
  }
  const auto x = activations(state.range(0));
  std::vector<float> y(x.size());
  for (auto _ : state) {
    silu_isa(isa, x.data(), y.data(), state.range(0));
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["ns/elem"] = benchmark::Counter(static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetLabel(cpu::isa_name(isa));
}
BENCHMARK(BM_SiluKernel)->ArgsProduct({{65536, 4096}, {0, 1, 2}});

void BM_SiluPortableLoop(benchmark::State& state) {
  const auto x = activations(state.range(0));
  std::vector<float> y(x.size());
  for (auto _ : state) {
    const float* px = x.data();
    float* py = y.data();
    for (int64_t i = 0; i < state.range(0); ++i) py[i] = px[i] * fast_sigmoid(px[i]);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["ns/elem"] = benchmark::Counter(static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SiluPortableLoop)->Arg(65536)->Arg(4096);

// The floor under any activation pass: a copy of the same buffer.
void BM_CopyPass(benchmark::State& state) {
  const auto x = activations(state.range(0));
  std::vector<float> y(x.size());
  for (auto _ : state) {
    std::copy(x.begin(), x.end(), y.begin());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["ns/elem"] = benchmark::Counter(static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CopyPass)->Arg(65536)->Arg(4096);

}  // namespace
}  // namespace sd::native::ops
