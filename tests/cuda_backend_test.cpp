// The CUDA backend where a GPU is present (each test skips with the reason elsewhere: CI has no
// GPU, the build may have no CUDA), and what it says where none is. Numerical conformance of its
// kernels is backend_conformance_test.cpp's ("cuda" rows).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "conformance/op_cases.h"
#include "engine/native/cuda/cuda_backend.h"
#ifdef STREAMDET_HAVE_CUDA
#include "engine/native/cuda/strided_copy_shape.h"
#endif
#include "engine/native/half.h"
#include "engine/native/session.h"
#include "fake_device_backend.h"
#include "onnx_builder.h"

namespace sd::native {
namespace {

using test::OnnxBuilder;

TEST(CudaBackend, WithoutAUsableGpuItSaysWhyInOneLine) {
  auto cuda = cuda_backend(0);
  if (cuda) GTEST_SKIP() << "a GPU is present: " << (*cuda)->description();
  EXPECT_EQ(cuda.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(cuda.error().message.find('\n'), std::string::npos);
  EXPECT_NE(cuda.error().message.find("CUDA"), std::string::npos) << cuda.error().message;
  const CudaInfo info = cuda_info();
  EXPECT_TRUE(info.devices.empty());
  EXPECT_FALSE(info.problem.empty());
#ifdef STREAMDET_HAVE_CUDA
  EXPECT_TRUE(info.built);
  EXPECT_FALSE(info.runtime.empty());
#else
  EXPECT_FALSE(info.built);
#endif
}

TEST(CudaBackend, ADeviceThatDoesNotExistIsRefused) {
  auto cuda = cuda_backend(4096);
  ASSERT_FALSE(cuda);
  EXPECT_EQ(cuda.error().code, ErrorCode::kUnsupported);
}

// Conv (GPU) -> Floor (no GPU kernel: CPU) -> Mul, Add (GPU) -> output: a copy at each crossing,
// results as the CPU's. Run against the CUDA backend where there is a GPU, and against the test
// device backend everywhere (same claims, same preferred layout), which checks what this test
// expects of the planner on any machine.
void expect_gpu_nodes_around_a_cpu_node(const std::shared_ptr<const Backend>& device) {
  OnnxBuilder b;
  b.input("x", {1, 8, 16, 16});
  b.random_initializer("w", {8, 8, 3, 3}, -0.3f, 0.3f);
  b.random_initializer("k", {1, 8, 1, 1}, -1.f, 1.f);
  auto* c = b.node("Conv", {"x", "w"}, {"c"});
  OnnxBuilder::attr_ints(c, "pads", {1, 1, 1, 1});
  b.node("Floor", {"c"}, {"f"});
  b.node("Mul", {"f", "k"}, {"m"});
  b.node("Add", {"m", "c"}, {"y"});
  b.output("y");
  const std::string bytes = b.bytes();
  LoadOptions lo;
  lo.optimize = false;
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", lo);
  ASSERT_TRUE(m) << m.error().message;
  HostTensor x(DType::kFloat32, Shape{1, 8, 16, 16});
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  TensorRef ref = x.ref();
  std::vector<HostTensor> cpu_out, gpu_out;
  auto cpu = NativeSession::create(*m, SessionOptions{1});
  ASSERT_TRUE((*cpu)->run(std::span<const TensorRef>(&ref, 1), cpu_out));
  // Channels-last (the default) and plain NCHW: the same nodes on the same backends; with
  // channels-last the planner adds layout conversions (Transposes) around the GPU's convolution,
  // which the GPU claims too (plan_layout.cpp: conv_nhwc, as the CUDA backend prefers NHWC).
  for (const bool channels_last : {false, true}) {
    SCOPED_TRACE(channels_last ? "channels-last" : "plain NCHW");
    SessionOptions so{1};
    so.channels_last = channels_last;
    so.backends = {device};
    auto gpu = NativeSession::create(*m, so);
    ASSERT_TRUE(gpu) << gpu.error().message;
    auto summary = (*gpu)->plan_summary({x.shape()});
    ASSERT_TRUE(summary) << summary.error().message;
    ASSERT_EQ(summary->backends.size(), 2u);
    const std::string gpu_name = summary->backends[0].name, cpu_name = summary->backends[1].name;
    int conversions_on_gpu = 0, conversions_on_cpu = 0;
    std::map<std::string, std::string> node_backend;  // op type -> backend
    for (const auto& step : summary->steps) {
      if (step.copy) continue;
      if (step.label == "layout conversion") {
        ++(step.backend == gpu_name ? conversions_on_gpu : conversions_on_cpu);
        continue;
      }
      node_backend[step.label.substr(0, step.label.find(' '))] = step.backend;
    }
    EXPECT_EQ(node_backend["Conv"], gpu_name);
    EXPECT_EQ(node_backend["Floor"], cpu_name);
    EXPECT_EQ(node_backend["Mul"], gpu_name);
    EXPECT_EQ(node_backend["Add"], gpu_name);
    EXPECT_EQ(node_backend.size(), 4u);
    if (!channels_last) EXPECT_EQ(conversions_on_gpu + conversions_on_cpu, 0);
    else EXPECT_GT(conversions_on_gpu, 0);  // at least the input's, before the GPU's NHWC convolution
    EXPECT_EQ(summary->backends[0].steps, 3 + conversions_on_gpu);  // Conv, Mul, Add and the conversions
    EXPECT_EQ(summary->backends[1].steps, 1 + conversions_on_cpu);  // Floor
    // x in, c out, f in, y out; with channels-last a conversion the CPU made could add a crossing.
    EXPECT_GE(summary->copies, 4);
    EXPECT_LE(summary->copies, 4 + conversions_on_cpu);
    for (int run = 0; run < 3; ++run) {
      auto st = (*gpu)->run(std::span<const TensorRef>(&ref, 1), gpu_out);
      ASSERT_TRUE(st) << st.error().message;
      ASSERT_EQ(gpu_out.size(), 1u);
      for (int64_t i = 0; i < cpu_out[0].numel(); ++i)
        ASSERT_NEAR(gpu_out[0].as<float>()[i], cpu_out[0].as<float>()[i], 1e-4f + 1e-4f * std::fabs(cpu_out[0].as<float>()[i])) << i;
    }
  }
}

TEST(CudaBackend, NodesTheGpuDoesNotRunGoToTheCpuBetweenGpuNodes) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  expect_gpu_nodes_around_a_cpu_node(*cuda);
}

TEST(CudaBackend, NodesTheGpuDoesNotRunGoToTheCpuBetweenGpuNodesOnTheTestDevice) {
  // The ops the CUDA backend claims here; Floor is not among them.
  expect_gpu_nodes_around_a_cpu_node(std::make_shared<test::FakeDeviceBackend>(std::set<std::string>{"Conv", "Mul", "Add", "Transpose"}));
}

// The bundled tiny model (a YOLOv8-style graph) runs wholly on the GPU: one copy in, one out, no
// allocation and no stream per run, outputs as the CPU's.
TEST(CudaBackend, TheBundledModelRunsWhollyOnTheGpuWithoutAllocatingPerRun) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  auto m = NativeModel::load(std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8.onnx");
  ASSERT_TRUE(m) << m.error().message;
  HostTensor x(DType::kFloat32, Shape{1, 3, 256, 256});
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  TensorRef ref = x.ref();
  std::vector<HostTensor> cpu_out, gpu_out;
  auto cpu = NativeSession::create(*m, SessionOptions{2});
  ASSERT_TRUE((*cpu)->run(std::span<const TensorRef>(&ref, 1), cpu_out));
  SessionOptions so{2};
  so.backends = {*cuda};
  auto gpu = NativeSession::create(*m, so);
  ASSERT_TRUE(gpu) << gpu.error().message;
  auto summary = (*gpu)->plan_summary({x.shape()});
  ASSERT_TRUE(summary) << summary.error().message;
  for (const auto& st : summary->steps) EXPECT_TRUE(st.copy || st.backend != "cpu") << st.label << " runs on the CPU";
  EXPECT_EQ(summary->copies, 2);
  EXPECT_NE(summary->graph.find("recorded on " + (*cuda)->name()), std::string::npos) << summary->graph;
  // The first run launches one by one, the second records the CUDA graph and replays it.
  for (int i = 0; i < 2; ++i) ASSERT_TRUE((*gpu)->run(std::span<const TensorRef>(&ref, 1), gpu_out));
  const BackendCounters before = (*cuda)->counters();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*gpu)->run(std::span<const TensorRef>(&ref, 1), gpu_out));
  const BackendCounters after = (*cuda)->counters();
  // No cudaMalloc, cudaFree, cudaHostAlloc, stream or graph capture per run (no event exists).
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.frees, before.frees);
  EXPECT_EQ(after.host_allocations, before.host_allocations);
  EXPECT_EQ(after.streams, before.streams);
  EXPECT_EQ(after.graph_captures, before.graph_captures);
  EXPECT_EQ(after.graph_launches - before.graph_launches, 5u);
  EXPECT_EQ(after.copies - before.copies, 5u * 2u);
  ASSERT_EQ(gpu_out.size(), cpu_out.size());
  double max_diff = 0, max_ref = 0;
  for (int64_t i = 0; i < cpu_out[0].numel(); ++i) {
    max_diff = std::max(max_diff, std::fabs(double(gpu_out[0].as<float>()[i]) - cpu_out[0].as<float>()[i]));
    max_ref = std::max(max_ref, std::fabs(double(cpu_out[0].as<float>()[i])));
  }
  EXPECT_LE(max_diff, 1e-3 * max_ref);
}

// --precision fp16: the same model wholly on the GPU with fp16 tensors (every backend row says
// float16 for the GPU), still one converting copy in and one out, nothing allocated per run,
// outputs float32 within the whole-model fp16 tolerance of the CPU's.
TEST(CudaBackend, TheBundledModelRunsWhollyOnTheGpuInFp16WithinItsTolerance) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  auto m = NativeModel::load(std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8.onnx");
  ASSERT_TRUE(m) << m.error().message;
  HostTensor x(DType::kFloat32, Shape{1, 3, 256, 256});
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  TensorRef ref = x.ref();
  std::vector<HostTensor> cpu_out, gpu_out;
  auto cpu = NativeSession::create(*m, SessionOptions{2});
  ASSERT_TRUE((*cpu)->run(std::span<const TensorRef>(&ref, 1), cpu_out));
  SessionOptions so{2};
  so.backends = {*cuda};
  so.device_fp16 = true;
  auto gpu = NativeSession::create(*m, so);
  ASSERT_TRUE(gpu) << gpu.error().message;
  auto summary = (*gpu)->plan_summary({x.shape()});
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->backends[0].precision, "float16");
  for (const auto& st : summary->steps) {
    EXPECT_TRUE(st.copy || st.backend != "cpu") << st.label << " runs on the CPU";
    if (st.copy) EXPECT_NE(st.implementation.find("float16"), std::string::npos) << st.implementation;
  }
  EXPECT_EQ(summary->copies, 2);
  ASSERT_TRUE((*gpu)->run(std::span<const TensorRef>(&ref, 1), gpu_out));
  const BackendCounters before = (*cuda)->counters();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*gpu)->run(std::span<const TensorRef>(&ref, 1), gpu_out));
  const BackendCounters after = (*cuda)->counters();
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.streams, before.streams);
  EXPECT_EQ(after.copies - before.copies, 5u * 2u);
  ASSERT_EQ(gpu_out.size(), cpu_out.size());
  EXPECT_EQ(gpu_out[0].dtype(), DType::kFloat32);
  double max_diff = 0, max_ref = 0;
  for (int64_t i = 0; i < cpu_out[0].numel(); ++i) {
    max_diff = std::max(max_diff, std::fabs(double(gpu_out[0].as<float>()[i]) - cpu_out[0].as<float>()[i]));
    max_ref = std::max(max_ref, std::fabs(double(cpu_out[0].as<float>()[i])));
  }
  EXPECT_GT(max_diff, 0) << "fp16 storage cannot give the CPU's float32 bits everywhere";
  EXPECT_LE(max_diff, conformance::kFp16ModelTolerance * max_ref);
}

// The GPU's conversions in the copies round as the host's float_to_half (round to nearest even,
// subnormals, overflow to infinity) and widen exactly: every fp16 value there and back, and
// float32 values around the ties.
TEST(CudaBackend, ConvertingCopiesRoundAsTheHostDoes) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  const Backend& b = **cuda;
  std::vector<float> values;
  for (uint32_t h = 0; h < 0x10000; ++h)
    if ((h & 0x7c00) != 0x7c00) values.push_back(half_to_float(static_cast<uint16_t>(h)));
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-70000.f, 70000.f);
  for (int i = 0; i < 65536; ++i) values.push_back(u(rng) * (i % 3 == 0 ? 1e-6f : 1.f));
  for (float v : {1.f + std::ldexp(1.f, -11), 1.f + 3 * std::ldexp(1.f, -11), std::ldexp(1.f, -25), std::ldexp(3.f, -25), 65519.f, 65520.f})
    values.push_back(v), values.push_back(-v);
  const size_t n = values.size();
  auto halves = b.allocate(n * 2);
  auto scratch = b.allocate(b.convert_scratch_bytes(n));
  ASSERT_TRUE(halves && scratch);
  auto stream = b.create_stream(1);
  ASSERT_TRUE(stream);
  std::vector<uint16_t> got(n);
  std::vector<float> back(n);
  ASSERT_TRUE(b.begin_run(**stream));
  ASSERT_TRUE(b.copy_convert(halves->data(), DType::kFloat16, b.device(), values.data(), DType::kFloat32, Device{}, n, scratch->data(), stream->get()));
  ASSERT_TRUE(b.copy_convert(back.data(), DType::kFloat32, Device{}, halves->data(), DType::kFloat16, b.device(), n, scratch->data(), stream->get()));
  ASSERT_TRUE(b.end_run(**stream));
  ASSERT_TRUE(b.copy(got.data(), Device{}, halves->data(), b.device(), n * 2, nullptr));
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(got[i], float_to_half(values[i])) << values[i];
    ASSERT_EQ(back[i], half_to_float(got[i])) << values[i];
  }
}

// The same model with CUDA graphs off: every kernel launched, no recording, the outputs of the
// replayed graph (the same kernels on the same memory layout).
TEST(CudaBackend, GraphReplayGivesThePlainLaunchesOutputs) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  auto m = NativeModel::load(std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8.onnx");
  ASSERT_TRUE(m) << m.error().message;
  std::vector<std::vector<HostTensor>> outs(2);
  for (const bool graphs : {true, false}) {
    SessionOptions so{2};
    so.cuda_graphs = graphs;
    so.backends = {*cuda};
    auto gpu = NativeSession::create(*m, so);
    ASSERT_TRUE(gpu) << gpu.error().message;
    const BackendCounters before = (*cuda)->counters();
    // A new input every run: the replay reads this run's input, not the recorded one's.
    for (uint32_t run = 0; run < 4; ++run) {
      HostTensor x(DType::kFloat32, Shape{1, 3, 256, 256});
      std::mt19937 rng(20 + run);
      std::uniform_real_distribution<float> u(0.f, 1.f);
      for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
      TensorRef ref = x.ref();
      ASSERT_TRUE((*gpu)->run(std::span<const TensorRef>(&ref, 1), outs[graphs ? 0 : 1]));
    }
    const BackendCounters after = (*cuda)->counters();
    EXPECT_EQ(after.graph_captures - before.graph_captures, graphs ? 1u : 0u);
    EXPECT_EQ(after.graph_launches - before.graph_launches, graphs ? 3u : 0u);
  }
  ASSERT_EQ(outs[0].size(), outs[1].size());
  for (size_t o = 0; o < outs[0].size(); ++o)
    for (int64_t i = 0; i < outs[1][o].numel(); ++i)
      ASSERT_NEAR(outs[0][o].as<float>()[i], outs[1][o].as<float>()[i], 1e-5f + 1e-5f * std::fabs(outs[1][o].as<float>()[i])) << i;
}

#ifdef STREAMDET_HAVE_CUDA
// The 64-bit index paths of the strided copy, the interleave, the nearest resize, the pooling and
// the fp16 epilogue (taken only from 2^30 elements, which no test model reaches) give the 32-bit
// paths' outputs: the bundled model in float32 and fp16, once as it runs and once with every
// launch forced onto its 64-bit path (cuda::force_64bit_indices, a new session: nothing recorded).
TEST(CudaBackend, SixtyFourBitIndexPathsGiveTheThirtyTwoBitPathsOutputs) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  ASSERT_FALSE(cuda::forced_64bit_indices()) << "off unless a test turns it on";
  auto m = NativeModel::load(std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8.onnx");
  ASSERT_TRUE(m) << m.error().message;
  HostTensor x(DType::kFloat32, Shape{1, 3, 256, 256});
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  TensorRef ref = x.ref();
  struct Wide {
    Wide() { cuda::force_64bit_indices(true); }
    ~Wide() { cuda::force_64bit_indices(false); }
  };
  for (const bool fp16 : {false, true}) {
    SessionOptions so{2};
    so.backends = {*cuda};
    so.device_fp16 = fp16;
    so.cuda_graphs = false;
    std::vector<HostTensor> narrow, wide;
    auto a = NativeSession::create(*m, so);
    ASSERT_TRUE(a) << a.error().message;
    ASSERT_TRUE((*a)->run(std::span<const TensorRef>(&ref, 1), narrow));
    {
      const Wide forced;
      auto b = NativeSession::create(*m, so);
      ASSERT_TRUE(b) << b.error().message;
      ASSERT_TRUE((*b)->run(std::span<const TensorRef>(&ref, 1), wide));
    }
    ASSERT_EQ(narrow.size(), wide.size());
    for (size_t o = 0; o < narrow.size(); ++o)
      for (int64_t i = 0; i < narrow[o].numel(); ++i)
        ASSERT_NEAR(wide[o].as<float>()[i], narrow[o].as<float>()[i], 1e-5f + 1e-5f * std::fabs(narrow[o].as<float>()[i]))
            << (fp16 ? "fp16" : "float32") << ", output " << o << ", element " << i;
  }
}
#endif

}  // namespace
}  // namespace sd::native
