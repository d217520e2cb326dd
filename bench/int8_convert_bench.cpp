// The quantization after an int8 layer computed in float32 or 16-bit integers
// (cpu/int8_float_convert.h: x / scale rounded half to even, plus the zero point, saturated, then
// a fused SiLU's table), per variant: 0 baseline, 1 AVX2, 2 AVX-512 (where the processor has
// them); with and without the table. Args: variant, table. --benchmark_filter=QuantizeRow.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/int8_float_convert.h"

namespace sd::native::ops::int8_float {
namespace {

void BM_QuantizeRow(benchmark::State& state) {
  const int64_t variant = state.range(0);
  const bool with_table = state.range(1) != 0;
  const cpu::Isa need = variant == 2 ? cpu::Isa::kAvx512 : variant == 1 ? cpu::Isa::kAvx2 : cpu::Isa::kBaseline;
  if (cpu::detected_isa() < need) {
    state.SkipWithError("this processor lacks the variant's instructions");
    return;
  }
  const QuantizeFn fn = quantize_kernel(need);
  constexpr int64_t n = 48 * 64;  // an int16 GEMM block of 48 pixels x 64 channels
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-3.f, 9.f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = u(rng);
  std::vector<uint8_t> table(256);
  for (size_t i = 0; i < 256; ++i) table[i] = static_cast<uint8_t>(255 - i);
  std::vector<uint8_t> y(static_cast<size_t>(n));
  const Quantization q{0.047f, 11, false};
  for (auto _ : state) {
    fn(x.data(), n, q, with_table ? table.data() : nullptr, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["values/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_QuantizeRow)->ArgsProduct({{0, 1, 2}, {0, 1}});

}  // namespace
}  // namespace sd::native::ops::int8_float
