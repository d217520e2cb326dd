// SiLU over a convolution output that is in cache (the case in a network: the activation runs
// right after the layer that wrote it): the vector kernel (cpu/activation_kernels.h) against the
// portable fast_sigmoid loop it replaces. Arg: floats (65536 = the tiny model's 64x64x16 layers,
// 256 KiB, in L2).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

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

void BM_SiluKernel(benchmark::State& state) {
  const auto x = activations(state.range(0));
  std::vector<float> y(x.size());
  for (auto _ : state) {
    silu(x.data(), y.data(), state.range(0));
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["ns/elem"] = benchmark::Counter(static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetLabel(activation_kernels_isa());
}
BENCHMARK(BM_SiluKernel)->Arg(65536)->Arg(4096);

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
