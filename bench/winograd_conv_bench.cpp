// Our Winograd F(4x4, 3x3) convolution (cpu/winograd_conv.h; its AVX-512 variant where the
// processor has AVX-512 and the channels are multiples of 16) against oneDNN's direct primitive on
// YOLOv8n's 3x3 stride-1 shapes, channels-last, with bias and SiLU as the engine runs them
// (oneDNN: the convolution with bias, then our SiLU pass over the output, as dnnl_conv.cpp does;
// ours: SiLU in the output transform). Args: input channels, output channels, side,
// implementation (0 oneDNN, 1 ours as the processor allows, 2 ours' AVX2 variant, 3 ours with the bf16
// GEMM where the processor has AVX512_BF16, as --precision bf16 takes it, 4 ours with F(6x6, 3x3)
// where its AVX-512 variant applies), threads (2: the setting; 1 for
// tuning on a busy machine, where the CPU time column of one thread is steadier than wall time).
// For oneDNN's AVX2 kernel on an AVX-512 machine, cap it as `--cpu-isa avx2` does for the
// engine:  ONEDNN_MAX_CPU_ISA=AVX2 ./build/bench/streamdet_bench --benchmark_filter=Winograd
// (the label names the ISA oneDNN ran).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <vector>

#include "core/cpu_isa.h"
#include "engine/native/cpu/activation_kernels.h"
#include "engine/native/cpu/winograd_conv.h"
#include "engine/native/cpu/pointwise_int16.h"
#include "engine/native/cpu/winograd_int16.h"

namespace sd::native::ops {
namespace {

void BM_Conv3x3Winograd(benchmark::State& state) {
  const int64_t c = state.range(0), oc = state.range(1), side = state.range(2);
  const bool ours = state.range(3) != 0;
  // range(3): 0 oneDNN, 1 ours, 2 ours' AVX2 variant, 3 ours with the bf16 GEMM, 4 ours in
  // F(6x6, 3x3), 5 ours' AVX2 variant in F(6x6, 3x3), 6 ours with the bf16 GEMM in F(6x6, 3x3).
  const cpu::Isa variant = state.range(3) == 2 || state.range(3) == 5 ? cpu::Isa::kAvx2 : cpu::active_isa();
  const int threads = state.range(4) > 0 ? static_cast<int>(state.range(4)) : 2;
  if (cpu::detected_isa() < cpu::Isa::kAvx2) {
    state.SkipWithError("this processor has no AVX2 + FMA");
    return;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> w(static_cast<size_t>(oc * c * 9)), b(static_cast<size_t>(oc)), x(static_cast<size_t>(c * side * side));
  for (auto* v : {&w, &b, &x})
    for (auto& f : *v) f = u(rng);
  std::vector<float> y(static_cast<size_t>(oc * side * side));
  omp_set_num_threads(threads);
  if (ours) {
    const WinoGemm gemm = state.range(3) == 3 || state.range(3) == 6 ? WinoGemm::kBf16 : WinoGemm::kFloat32;
    const WinoTile tile = state.range(3) >= 4 ? WinoTile::k6x6 : WinoTile::k4x4;
    const WinogradConv conv({1, c, side, side, oc}, w.data(), b.data(), {{WinoPostKind::kSilu}}, variant, gemm, tile);
    state.SetLabel(conv.name());  // the AVX-512 variant where the processor has it
    for (auto _ : state) {
      conv.run(x.data(), y.data(), nullptr, threads);
      benchmark::DoNotOptimize(y.data());
    }
  } else {
    using dnnl::memory;
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream strm(eng);
    const memory::desc src_md({1, c, side, side}, memory::data_type::f32, memory::format_tag::nhwc);
    const memory::desc dst_md({1, oc, side, side}, memory::data_type::f32, memory::format_tag::nhwc);
    const memory::desc wei_any({oc, c, 3, 3}, memory::data_type::f32, memory::format_tag::any);
    const memory::desc bias_md({oc}, memory::data_type::f32, memory::format_tag::a);
    const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md, wei_any,
                                            bias_md, dst_md, {1, 1}, {1, 1}, {1, 1});
    const dnnl::convolution_forward::primitive_desc pd(d, eng);
    memory wei_user({{oc, c, 3, 3}, memory::data_type::f32, memory::format_tag::oihw}, eng, w.data());
    memory wei(pd.weights_desc(), eng);
    dnnl::reorder(wei_user, wei).execute(strm, wei_user, wei);
    memory src(src_md, eng, x.data()), dst(dst_md, eng, y.data()), bias(bias_md, eng, b.data());
    dnnl::convolution_forward conv(pd);
    state.SetLabel(std::string(pd.impl_info_str()) + " (oneDNN " + cpu::onednn_isa_name() + ")");
    for (auto _ : state) {
      conv.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}});
      strm.wait();
#pragma omp parallel for num_threads(threads)
      for (int p = 0; p < threads; ++p) {
        const int64_t n = static_cast<int64_t>(y.size()), b0 = n * p / threads, b1 = n * (p + 1) / threads;
        silu(y.data() + b0, y.data() + b0, b1 - b0);
      }
      benchmark::DoNotOptimize(y.data());
    }
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(static_cast<double>(2 * 9 * c * oc * side * side), benchmark::Counter::kIsIterationInvariantRate);
}
// YOLOv8n at 640: the head's 64->80, 80->80 and 64->64 at 80x80 (P3), 80->80 at 40x40 and 20x20,
// and the C2f bottlenecks 32->32 at 80x80, 64->64 at 40x40, 128->128 at 20x20.
BENCHMARK(BM_Conv3x3Winograd)
    ->ArgsProduct({{64}, {80}, {80}, {0, 1, 2, 3}, {1, 2}})
    ->ArgsProduct({{80}, {80}, {80, 40, 20}, {0, 1, 2, 3}, {1, 2}})
    ->ArgsProduct({{64}, {64}, {80, 40}, {0, 1, 2, 3}, {1, 2}})
    ->ArgsProduct({{32}, {32}, {80}, {0, 1, 2, 3}, {1, 2}})
    ->ArgsProduct({{128}, {128}, {20}, {0, 1, 2, 3}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// F(4x4, 3x3) (1) against F(6x6, 3x3) (4) on every YOLOv8n 3x3 stride-1 shape the AVX-512 variant
// takes (both channel counts multiples of 16): 16@160, 32@80, 64@80 and 40, 64->80 and 80@80,
// 80@40 and 20, 128@40 and 20, 256@20. --benchmark_filter=Winograd6 runs them alone.
void BM_Conv3x3Winograd6(benchmark::State& state) { BM_Conv3x3Winograd(state); }
BENCHMARK(BM_Conv3x3Winograd6)
    ->ArgsProduct({{16}, {16}, {160}, {1, 4}, {1, 2}})
    ->ArgsProduct({{32}, {32}, {80}, {1, 4}, {1, 2}})
    ->ArgsProduct({{64}, {64}, {80, 40}, {1, 4}, {1, 2}})
    ->ArgsProduct({{64}, {80}, {80}, {1, 4}, {1, 2}})
    ->ArgsProduct({{80}, {80}, {80, 40, 20}, {1, 4}, {1, 2}})
    ->ArgsProduct({{128}, {128}, {40, 20}, {1, 4}, {1, 2}})
    ->ArgsProduct({{256}, {256}, {20}, {1, 4}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The bf16 GEMM in F(4x4, 3x3) (3) against F(6x6, 3x3) (6), on the shapes where the float32
// variant takes F(6x6) (maps of 48 and more). --benchmark_filter=Winograd6Bf16.
void BM_Conv3x3Winograd6Bf16(benchmark::State& state) { BM_Conv3x3Winograd(state); }
BENCHMARK(BM_Conv3x3Winograd6Bf16)
    ->ArgsProduct({{16}, {16}, {160}, {3, 6}, {1, 2}})
    ->ArgsProduct({{32}, {32}, {80}, {3, 6}, {1, 2}})
    ->ArgsProduct({{64}, {64}, {80}, {3, 6}, {1, 2}})
    ->ArgsProduct({{64}, {80}, {80}, {3, 6}, {1, 2}})
    ->ArgsProduct({{80}, {80}, {80}, {3, 6}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The same on the AVX2 variant (2: F(4x4, 3x3), 5: F(6x6, 3x3)), on every YOLOv8n 3x3 stride-1
// shape: --benchmark_filter=Winograd6Avx2.
void BM_Conv3x3Winograd6Avx2(benchmark::State& state) { BM_Conv3x3Winograd(state); }
BENCHMARK(BM_Conv3x3Winograd6Avx2)
    ->ArgsProduct({{16}, {16}, {160}, {2, 5}, {1, 2}})
    ->ArgsProduct({{32}, {32}, {80}, {2, 5}, {1, 2}})
    ->ArgsProduct({{64}, {64}, {80, 40}, {2, 5}, {1, 2}})
    ->ArgsProduct({{64}, {80}, {80}, {2, 5}, {1, 2}})
    ->ArgsProduct({{80}, {80}, {80, 40, 20}, {2, 5}, {1, 2}})
    ->ArgsProduct({{128}, {128}, {40, 20}, {2, 5}, {1, 2}})
    ->ArgsProduct({{256}, {256}, {20}, {2, 5}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// An int8 convolution on a processor without VNNI (AVX2): our float32 Winograd on the dequantized
// source, as int8_conv_in_float.cpp computed it before (0: F(4x4, 3x3), 1: F(6x6, 3x3); the
// dequantization and quantization passes around it not counted), against the int16 Winograd on
// the bytes (2, cpu/winograd_int16.h). Args: channels, output channels, side, implementation,
// threads. YOLOv8n's 3x3 stride-1 shapes at 640. --benchmark_filter=WinogradInt16.
void BM_Conv3x3WinogradInt16(benchmark::State& state) {
  const int64_t c = state.range(0), oc = state.range(1), side = state.range(2), impl = state.range(3);
  const int threads = static_cast<int>(state.range(4));
  if (cpu::detected_isa() < cpu::Isa::kAvx2) {
    state.SkipWithError("this processor has no AVX2 + FMA");
    return;
  }
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> byte(0, 255), weight(-127, 127);
  std::vector<uint8_t> xq(static_cast<size_t>(c * side * side));
  std::vector<int8_t> wq(static_cast<size_t>(oc * c * 9));
  for (auto& v : xq) v = static_cast<uint8_t>(byte(rng));
  for (auto& v : wq) v = static_cast<int8_t>(weight(rng) / 4);  // trained layers' weights are mostly small
  const float xs = 0.02f, ws = 0.004f;
  std::vector<float> x(xq.size()), w(wq.size()), b(static_cast<size_t>(oc), 0.1f), y(static_cast<size_t>(oc * side * side));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(xq[i] - 3) * xs;
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(wq[i]) * ws;
  omp_set_num_threads(threads);
  if (impl < 2) {
    const WinogradConv conv({1, c, side, side, oc}, w.data(), b.data(), {}, cpu::Isa::kAvx2, WinoGemm::kFloat32,
                            impl == 1 ? WinoTile::k6x6 : WinoTile::k4x4);
    state.SetLabel(conv.name());
    for (auto _ : state) {
      conv.run(x.data(), y.data(), nullptr, threads);
      benchmark::DoNotOptimize(y.data());
    }
  } else {
    const ConvGeometry g{1, c, side, side, oc, 3, 3, side, side, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const Int16Winograd conv(g, wq.data(), {ws}, b.data(), xs, 3, false);
    state.SetLabel(std::string(conv.name()) + " chunk " + std::to_string(conv.chunk_channels()));
    for (auto _ : state) {
      conv.run(xq.data(), y.data(), threads);
      benchmark::DoNotOptimize(y.data());
    }
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(static_cast<double>(2 * 9 * c * oc * side * side), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Conv3x3WinogradInt16)
    ->ArgsProduct({{16}, {16}, {160}, {0, 1, 2}, {1, 2}})
    ->ArgsProduct({{32}, {32}, {80}, {0, 1, 2}, {1, 2}})
    ->ArgsProduct({{64}, {64}, {80, 40}, {0, 1, 2}, {1, 2}})
    ->ArgsProduct({{64}, {80}, {80}, {0, 1, 2}, {1, 2}})
    ->ArgsProduct({{80}, {80}, {80, 40, 20}, {0, 1, 2}, {1, 2}})
    ->ArgsProduct({{128}, {128}, {40, 20}, {0, 1, 2}, {1, 2}})
    ->ArgsProduct({{256}, {256}, {20}, {0, 1, 2}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The int16 GEMM (cpu/pointwise_int16.h) on YOLOv8n's stride-2 3x3 layers and a 1x1 one, quantized
// with a SiLU table as the int8 plan runs it. Args: channels, output channels, input side, kernel
// (1 or 3: stride 2 pad 1 for 3), threads. --benchmark_filter=Int16Gemm.
void BM_Int16Gemm(benchmark::State& state) {
  const int64_t c = state.range(0), oc = state.range(1), side = state.range(2), k = state.range(3);
  const int threads = static_cast<int>(state.range(4));
  if (cpu::detected_isa() < cpu::Isa::kAvx2) {
    state.SkipWithError("this processor has no AVX2");
    return;
  }
  const int64_t s = k == 3 ? 2 : 1, p = k == 3 ? 1 : 0, out = (side + 2 * p - k) / s + 1;
  const ConvGeometry g{1, c, side, side, oc, k, k, out, out, 1, s, s, 1, 1, p, p, p, p};
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> byte(0, 255), weight(-127, 127);
  std::vector<uint8_t> xq(static_cast<size_t>(c * side * side)), yq(static_cast<size_t>(oc * out * out));
  std::vector<int8_t> wq(static_cast<size_t>(oc * c * k * k));
  for (auto& v : xq) v = static_cast<uint8_t>(byte(rng));
  for (auto& v : wq) v = static_cast<int8_t>(weight(rng));
  std::vector<float> b(static_cast<size_t>(oc), 0.1f);
  std::vector<uint8_t> table(256);
  for (size_t i = 0; i < 256; ++i) table[i] = static_cast<uint8_t>(i);
  omp_set_num_threads(threads);
  const Int16Pointwise conv(g, wq.data(), {0.004f}, b.data(), 0.02f, 3, false);
  const int8_float::Quantization y{0.05f, 10, false};
  const auto quantize = int8_float::quantize_kernel(cpu::active_isa());
  state.SetLabel(conv.name());
  for (auto _ : state) {
    conv.run_quantized(xq.data(), yq.data(), y, table.data(), quantize, threads);
    benchmark::DoNotOptimize(yq.data());
  }
  state.counters["GMAC/s"] = benchmark::Counter(static_cast<double>(k * k * c * oc * out * out), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Int16Gemm)
    ->Args({16, 32, 320, 3, 1})
    ->Args({32, 64, 160, 3, 1})
    ->Args({64, 128, 80, 3, 1})
    ->Args({128, 256, 40, 3, 1})
    ->Args({64, 64, 80, 1, 1})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace sd::native::ops
