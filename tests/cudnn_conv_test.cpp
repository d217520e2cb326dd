// The cuDNN convolution path of the CUDA backend: its run-time loader and host-side logic here
// (no GPU needed), and cuDNN against the direct kernel on YOLOv8n's convolution geometries where a
// GPU and cuDNN are present (skipped with the reason elsewhere).
#include <gtest/gtest.h>

#ifdef STREAMDET_HAVE_CUDA

#include <cmath>
#include <random>

#include "conformance/op_cases.h"
#include "engine/native/conv_attrs.h"
#include "engine/native/cuda/cuda_backend.h"
#include "engine/native/cuda/cudnn_conv_desc.h"
#include "engine/native/cuda/cudnn_library.h"
#include "engine/native/session.h"
#include "onnx_builder.h"

namespace sd::native::cuda {
namespace {

TEST(CudnnLibrary, AMissingLibraryIsOneLineNamingIt) {
  auto lib = CudnnLibrary::open("libcudnn_streamdet_test_missing.so.9");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(lib.error().message.find('\n'), std::string::npos);
  EXPECT_NE(lib.error().message.find("cuDNN not found"), std::string::npos) << lib.error().message;
  EXPECT_NE(lib.error().message.find("libcudnn_streamdet_test_missing.so.9"), std::string::npos) << lib.error().message;
}

TEST(CudnnLibrary, ALibraryThatIsNotCudnnIsRefusedNamingTheMissingEntryPoint) {
  auto lib = CudnnLibrary::open("libc.so.6");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(lib.error().message.find("lacks cudnnGetVersion"), std::string::npos) << lib.error().message;
}

// Loading needs no GPU: where libcudnn.so.9 is on the loader's path it loads and names statuses;
// elsewhere the process's cuDNN is absent with a one-line reason.
TEST(CudnnLibrary, TheProcessCudnnLoadsOrSaysWhyInOneLine) {
  const CudnnLibrary* lib = CudnnLibrary::shared();
  if (!lib) {
    const std::string why = CudnnLibrary::shared_problem();
    EXPECT_NE(why.find("libcudnn.so.9"), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos);
    GTEST_SKIP() << why;
  }
  EXPECT_EQ(lib->version() / 10000, 9u);
  EXPECT_EQ(lib->version_text().rfind("9.", 0), 0u) << lib->version_text();
  EXPECT_TRUE(lib->check(CUDNN_STATUS_SUCCESS, "cudnnTest"));
  const Status bad = lib->check(CUDNN_STATUS_BAD_PARAM, "cudnnTest");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("cudnnTest"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("CUDNN_STATUS_BAD_PARAM"), std::string::npos) << bad.error().message;
}

// A Conv node's geometry as the CPU's conv_attrs computes it from the ONNX attributes.
ops::ConvGeometry geometry(Shape x, Shape w, std::vector<int64_t> pads, std::vector<int64_t> strides,
                           std::vector<int64_t> dilations, int64_t group, Shape y) {
  Node n;
  n.op_type = "Conv";
  n.name = "c";
  auto ints = [](std::vector<int64_t> v) {
    Attribute a;
    a.kind = Attribute::Kind::kInts;
    a.ints = std::move(v);
    return a;
  };
  n.attrs.set("pads", ints(pads));
  n.attrs.set("strides", ints(strides));
  n.attrs.set("dilations", ints(dilations));
  Attribute g;
  g.i = group;
  n.attrs.set("group", g);
  std::vector<ValueType> in{{DType::kFloat32, x}, {DType::kFloat32, w}}, out{{DType::kFloat32, y}};
  std::vector<const HostTensor*> consts{nullptr, nullptr};
  OpContext ctx{n, 17, in, consts, out};
  auto r = ops::conv_geometry(ctx);
  EXPECT_TRUE(r) << r.error().message;
  return *r;
}

TEST(CudnnConvShape, OnnxAttributesMapOntoCudnnDescriptors) {
  // A 3x3 stride-2 depthwise-style grouped convolution with dilation, NCHW in, NHWC out.
  const auto g = geometry(Shape{2, 8, 17, 20}, Shape{16, 2, 3, 3}, {2, 1, 2, 1}, {2, 1}, {2, 1}, 4, Shape{2, 16, 9, 20});
  auto s = cudnn_conv_shape(g, /*src_nhwc=*/false, /*dst_nhwc=*/true);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->x_dims, (std::array<int, 4>{2, 8, 17, 20}));
  EXPECT_EQ(s->x_strides, (std::array<int, 4>{8 * 17 * 20, 17 * 20, 20, 1}));
  EXPECT_EQ(s->y_dims, (std::array<int, 4>{2, 16, 9, 20}));
  EXPECT_EQ(s->y_strides, (std::array<int, 4>{9 * 20 * 16, 1, 20 * 16, 16}));
  EXPECT_EQ(s->w_dims, (std::array<int, 4>{16, 2, 3, 3}));
  EXPECT_EQ(s->pad_h, 2);
  EXPECT_EQ(s->pad_w, 1);
  EXPECT_EQ(s->stride_h, 2);
  EXPECT_EQ(s->stride_w, 1);
  EXPECT_EQ(s->dilation_h, 2);
  EXPECT_EQ(s->dilation_w, 1);
  EXPECT_EQ(s->groups, 4);
}

// Every YOLOv8n convolution geometry at 640x640 (kernel, stride, channels): cuDNN's output size
// formula gives the size the CPU's shape inference gives.
TEST(CudnnConvShape, CudnnOutputSizesAreTheCpusOnYolov8nGeometries) {
  struct G { int64_t c, oc, hw, k, s; };
  for (const G& v : {G{3, 16, 640, 3, 2}, G{16, 32, 320, 3, 2}, G{32, 32, 160, 1, 1}, G{16, 16, 160, 3, 1}, G{32, 64, 160, 3, 2},
                     G{64, 128, 80, 3, 2}, G{128, 256, 40, 3, 2}, G{256, 128, 20, 1, 1}, G{64, 64, 80, 3, 1}, G{64, 80, 80, 1, 1},
                     G{16, 1, 80 * 80, 1, 1}}) {
    const int64_t p = v.k / 2, o = (v.hw + 2 * p - v.k) / v.s + 1;
    const auto g = geometry(Shape{1, v.c, v.hw, v.hw == 6400 ? 4 : v.hw}, Shape{v.oc, v.c, v.k, v.k}, {p, p, p, p}, {v.s, v.s},
                            {1, 1}, 1, Shape{1, v.oc, o, v.hw == 6400 ? (4 + 2 * p - v.k) / v.s + 1 : o});
    auto s = cudnn_conv_shape(g, true, true);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(s->y_dims[2], g.oh);
    EXPECT_EQ(s->y_dims[3], g.ow);
    EXPECT_EQ(cudnn_output_size(int(g.h), int(g.pt), int(g.kh), int(g.sh), int(g.dh)), g.oh);
  }
}

TEST(CudnnConvShape, AsymmetricPaddingKeepsTheDirectKernelAndSaysWhy) {
  const auto g = geometry(Shape{1, 4, 8, 8}, Shape{4, 4, 3, 3}, {0, 0, 1, 1}, {1, 1}, {1, 1}, 1, Shape{1, 4, 7, 7});
  auto s = cudnn_conv_shape(g, false, false);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(s.error().message.find("asymmetric padding"), std::string::npos) << s.error().message;
}

// cuDNN's NHWC filter layout [k, kh, kw, c] from ONNX's [k, c, kh, kw]: element (o, i, y, x) lands
// where the direct kernel's indexing would find it in that layout.
TEST(CudnnConvShape, WeightsForTheNhwcFilterFormatAreKhwc) {
  const std::array<int, 4> d{2, 3, 2, 4};
  std::vector<float> w(2 * 3 * 2 * 4);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i);
  const std::vector<float> t = oihw_to_ohwi(w, d);
  ASSERT_EQ(t.size(), w.size());
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 3; ++i)
      for (int y = 0; y < 2; ++y)
        for (int x = 0; x < 4; ++x) EXPECT_EQ(t[((o * 2 + y) * 4 + x) * 3 + i], w[((o * 3 + i) * 2 + y) * 4 + x]);
}

TEST(CudnnProbe, AgreementWithinToleranceAcceptsTheCudnnPlan) {
  const std::vector<float> direct{1.f, -20.f, 3.f, 0.f}, cudnn{1.f + 1e-4f, -20.f - 1e-3f, 3.f, 1e-4f};
  EXPECT_EQ(cudnn_probe_disagreement(cudnn, direct, kCudnnFp32ProbeTolerance), "");  // limit 1e-4 * 20
}

TEST(CudnnProbe, AnyElementBeyondToleranceOrANanFallsBackWithTheReason) {
  const std::vector<float> direct{1.f, 2.f, 3.f};
  const std::string far = cudnn_probe_disagreement(std::vector<float>{1.f, 2.1f, 3.f}, direct, kCudnnFp32ProbeTolerance);
  EXPECT_NE(far.find("element 1"), std::string::npos) << far;
  const std::string nan = cudnn_probe_disagreement(std::vector<float>{1.f, 2.f, std::nanf("")}, direct, kCudnnFp32ProbeTolerance);
  EXPECT_NE(nan.find("NaN at element 2"), std::string::npos) << nan;
  EXPECT_NE(cudnn_probe_disagreement(std::vector<float>{1.f}, direct, kCudnnFp32ProbeTolerance), "");
}

// On a GPU with cuDNN: each YOLOv8n convolution geometry (at 320x320 to keep it short), with bias,
// SiLU and a residual sum, runs through cuDNN ("cudnn:<algo>" or "cudnn-graph:eng<id>" in the
// plan, whichever engine measured faster) and gives the CPU's
// output. Where cuDNN refuses a node, the plan says why and the test names it.
// fp16: the same through cuDNN's fp16 path (tensor cores, "cudnn:<algo>.../fp16"), within the
// fp16 conformance tolerance of the CPU's float32.
void expect_yolov8n_geometries_through_cudnn(const std::shared_ptr<const Backend>& gpu_backend, bool fp16) {
  struct G { int64_t c, oc, hw, k, s, group; };
  for (const G& v : {G{3, 16, 320, 3, 2, 1}, G{16, 32, 160, 3, 2, 1}, G{32, 32, 80, 1, 1, 1}, G{16, 16, 80, 3, 1, 1},
                     G{64, 128, 40, 3, 2, 1}, G{256, 128, 10, 1, 1, 1}, G{64, 64, 40, 3, 1, 1}, G{64, 80, 40, 1, 1, 1},
                     G{32, 32, 40, 3, 1, 32}}) {
    SCOPED_TRACE(std::to_string(v.c) + "->" + std::to_string(v.oc) + " " + std::to_string(v.k) + "x" + std::to_string(v.k) + "/" +
                 std::to_string(v.s) + " at " + std::to_string(v.hw));
    const int64_t p = v.k / 2, o = (v.hw + 2 * p - v.k) / v.s + 1;
    test::OnnxBuilder b;
    b.input("x", {1, v.c, v.hw, v.hw});
    b.random_initializer("w", {v.oc, v.c / v.group, v.k, v.k}, -0.3f, 0.3f);
    b.random_initializer("b", {v.oc}, -0.5f, 0.5f);
    auto* c = b.node("Conv", {"x", "w", "b"}, {"c"});
    test::OnnxBuilder::attr_ints(c, "pads", {p, p, p, p});
    test::OnnxBuilder::attr_ints(c, "strides", {v.s, v.s});
    test::OnnxBuilder::attr_int(c, "group", v.group);
    b.node("Sigmoid", {"c"}, {"sg"});
    b.node("Mul", {"c", "sg"}, {"a"});  // SiLU, fused into the Conv by the optimizer
    b.random_initializer("r", {1, v.oc, o, o}, -1.f, 1.f);
    b.node("Add", {"a", "r"}, {"y"});
    b.output("y");
    const std::string bytes = b.bytes();
    auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", LoadOptions{});
    ASSERT_TRUE(m) << m.error().message;
    HostTensor x(DType::kFloat32, Shape{1, v.c, v.hw, v.hw});
    std::mt19937 rng(21);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
    TensorRef ref = x.ref();
    std::vector<HostTensor> cpu_out, gpu_out;
    auto cpu = NativeSession::create(*m, SessionOptions{2});
    ASSERT_TRUE((*cpu)->run(std::span<const TensorRef>(&ref, 1), cpu_out));
    SessionOptions so{2};
    so.backends = {gpu_backend};
    so.device_fp16 = fp16;
    auto gpu = NativeSession::create(*m, so);
    ASSERT_TRUE(gpu) << gpu.error().message;
    auto summary = (*gpu)->plan_summary({x.shape()});
    ASSERT_TRUE(summary) << summary.error().message;
    bool through_cudnn = false;
    for (const auto& st : summary->steps)
      if (st.implementation.rfind("cudnn:", 0) == 0 || st.implementation.rfind("cudnn-graph:", 0) == 0) {
        // Either cuDNN engine (cudnn_engine_choice.h); the note in parentheses names the other.
        through_cudnn = true;
        EXPECT_EQ(st.implementation.substr(0, st.implementation.find(" (")).ends_with("/fp16"), fp16) << st.implementation;
      } else if (st.implementation.rfind("direct", 0) == 0) {
        ADD_FAILURE() << st.label << ": " << st.implementation;
      }
    EXPECT_TRUE(through_cudnn);
    ASSERT_TRUE((*gpu)->run(std::span<const TensorRef>(&ref, 1), gpu_out));
    ASSERT_EQ(gpu_out.size(), 1u);
    const double atol = fp16 ? conformance::kFp16Atol : conformance::kFp32Atol, rtol = fp16 ? conformance::kFp16Rtol : conformance::kFp32Rtol;
    for (int64_t i = 0; i < cpu_out[0].numel(); ++i)
      ASSERT_NEAR(gpu_out[0].as<float>()[i], cpu_out[0].as<float>()[i], atol + rtol * std::fabs(cpu_out[0].as<float>()[i])) << i;
  }
}

TEST(CudnnConv, Yolov8nGeometriesRunThroughCudnnAndMatchTheCpu) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  if (!CudnnLibrary::shared()) GTEST_SKIP() << CudnnLibrary::shared_problem();
  expect_yolov8n_geometries_through_cudnn(*cuda, false);
}

TEST(CudnnConv, Yolov8nGeometriesRunThroughCudnnInFp16WithinItsTolerance) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  if (!CudnnLibrary::shared()) GTEST_SKIP() << CudnnLibrary::shared_problem();
  expect_yolov8n_geometries_through_cudnn(*cuda, true);
}

// A convolution reading a Split's part, a view at an element offset that is not 16-byte aligned
// (plain layout: the parts alias the input), in fp32 and fp16: the run takes the direct kernel
// where cuDNN's vectorized kernels would want aligned data, and the outputs are the CPU's.
TEST(CudnnConv, AConvolutionOnAMisalignedViewStillMatchesTheCpu) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  if (!CudnnLibrary::shared()) GTEST_SKIP() << CudnnLibrary::shared_problem();
  test::OnnxBuilder b;
  b.input("x", {1, 9, 5, 5});
  b.initializer_i64("parts", {2}, {1, 8});
  b.random_initializer("w", {8, 8, 3, 3}, -0.3f, 0.3f);
  b.node("Relu", {"x"}, {"r"});  // on the GPU: the Split's input in its arena, not the host's input
  auto* sp = b.node("Split", {"r", "parts"}, {"p", "q"});
  test::OnnxBuilder::attr_int(sp, "axis", 1);
  auto* c = b.node("Conv", {"q", "w"}, {"y"});
  test::OnnxBuilder::attr_ints(c, "pads", {1, 1, 1, 1});
  b.output("y");
  b.output("p");
  const std::string bytes = b.bytes();
  LoadOptions lo;
  lo.optimize = false;
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", lo);
  ASSERT_TRUE(m) << m.error().message;
  HostTensor x(DType::kFloat32, Shape{1, 9, 5, 5});
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  TensorRef ref = x.ref();
  std::vector<HostTensor> cpu_out, gpu_out;
  auto cpu = NativeSession::create(*m, SessionOptions{1});
  ASSERT_TRUE((*cpu)->run(std::span<const TensorRef>(&ref, 1), cpu_out));
  for (const bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    SessionOptions so{1};
    so.channels_last = false;
    so.backends = {*cuda};
    so.device_fp16 = fp16;
    auto gpu = NativeSession::create(*m, so);
    ASSERT_TRUE(gpu) << gpu.error().message;
    ASSERT_TRUE((*gpu)->run(std::span<const TensorRef>(&ref, 1), gpu_out));
    const double atol = fp16 ? conformance::kFp16Atol : conformance::kFp32Atol, rtol = fp16 ? conformance::kFp16Rtol : conformance::kFp32Rtol;
    for (size_t o = 0; o < cpu_out.size(); ++o)
      for (int64_t i = 0; i < cpu_out[o].numel(); ++i)
        ASSERT_NEAR(gpu_out[o].as<float>()[i], cpu_out[o].as<float>()[i], atol + rtol * std::fabs(cpu_out[o].as<float>()[i])) << o << " " << i;
  }
}

}  // namespace
}  // namespace sd::native::cuda

#endif  // STREAMDET_HAVE_CUDA
