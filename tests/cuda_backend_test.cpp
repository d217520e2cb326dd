// The CUDA backend where a GPU is present (each test skips with the reason elsewhere: CI has no
// GPU, the build may have no CUDA), and what it says where none is. Numerical conformance of its
// kernels is backend_conformance_test.cpp's ("cuda" rows).
#include <gtest/gtest.h>

#include <random>

#include "engine/native/cuda/cuda_backend.h"
#include "engine/native/session.h"
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

// Conv (CPU) -> Sigmoid, Mul, Add (GPU) -> output: copies in and out, results as the CPU's.
TEST(CudaBackend, ElementwiseNodesRunOnTheGpuBetweenCpuNodes) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  OnnxBuilder b;
  b.input("x", {1, 8, 16, 16});
  b.random_initializer("w", {8, 8, 3, 3}, -0.3f, 0.3f);
  b.random_initializer("k", {1, 8, 1, 1}, -1.f, 1.f);
  auto* c = b.node("Conv", {"x", "w"}, {"c"});
  OnnxBuilder::attr_ints(c, "pads", {1, 1, 1, 1});
  b.node("Sigmoid", {"c"}, {"s"});
  b.node("Mul", {"s", "k"}, {"m"});
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
  SessionOptions so{1};
  so.backends = {*cuda};
  auto gpu = NativeSession::create(*m, so);
  ASSERT_TRUE(gpu) << gpu.error().message;
  auto summary = (*gpu)->plan_summary({x.shape()});
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->backends[0].steps, 3);  // Sigmoid, Mul, Add
  for (int run = 0; run < 3; ++run) {
    auto st = (*gpu)->run(std::span<const TensorRef>(&ref, 1), gpu_out);
    ASSERT_TRUE(st) << st.error().message;
    ASSERT_EQ(gpu_out.size(), 1u);
    for (int64_t i = 0; i < cpu_out[0].numel(); ++i)
      ASSERT_NEAR(gpu_out[0].as<float>()[i], cpu_out[0].as<float>()[i], 1e-5f + 1e-5f * std::fabs(cpu_out[0].as<float>()[i])) << i;
  }
}

}  // namespace
}  // namespace sd::native
