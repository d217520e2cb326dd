// cuDNN's graph engine for convolutions (cudnn_graph_conv.h): its host-side rules here (post op ->
// pointwise operation, which engine a node keeps), its operations against this machine's cuDNN
// where it loads (no GPU needed to make and finalize them), and on a GPU the fused graph against
// the direct kernel on YOLOv8n's geometries and a whole model against the CPU (skipped elsewhere,
// with the reason).
#include <gtest/gtest.h>

#ifdef STREAMDET_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <cmath>
#include <random>

#include "conformance/op_cases.h"
#include "engine/native/conv_attrs.h"
#include "engine/native/cuda/cuda_backend.h"
#include "engine/native/cuda/cudnn_engine_choice.h"
#include "engine/native/cuda/cudnn_graph_conv.h"
#include "engine/native/cuda/cudnn_graph_rules.h"
#include "engine/native/cuda/cudnn_library.h"
#include "engine/native/cuda/cudnn_support.h"
#include "engine/native/session.h"

namespace sd::native::cuda {
namespace {

using Operand = CudnnPointwiseStep::Operand;

ConvParams with_post_ops(std::initializer_list<ops::PostOp> post) {
  ConvParams p{};
  p.n = 1, p.c = 8, p.h = 8, p.w = 8, p.oc = 8, p.kh = 3, p.kw = 3, p.oh = 8, p.ow = 8, p.group = 1;
  p.sh = p.sw = p.dh = p.dw = 1, p.pt = p.pl = 1;
  for (const ops::PostOp& o : post) {
    p.post_kind[p.post_count] = static_cast<int>(o.kind);
    p.post_alpha[p.post_count] = o.alpha, p.post_beta[p.post_count] = o.beta;
    ++p.post_count;
  }
  return p;
}

// YOLOv8n's Conv block and bottleneck: bias, SiLU, then the residual add.
TEST(CudnnGraphRules, BiasSiluAndTheResidualSumBecomePointwiseStepsInOrder) {
  auto steps = cudnn_graph_epilogue(with_post_ops({{ops::PostKind::kSilu}, {ops::PostKind::kSum}}), /*bias=*/true);
  ASSERT_TRUE(steps) << steps.error().message;
  ASSERT_EQ(steps->size(), 3u);
  EXPECT_EQ((*steps)[0].mode, CUDNN_POINTWISE_ADD);
  EXPECT_EQ((*steps)[0].operand, Operand::kBias);
  EXPECT_EQ((*steps)[1].mode, CUDNN_POINTWISE_SWISH_FWD);
  EXPECT_EQ((*steps)[1].swish_beta, 1.0);  // x * sigmoid(1 x): SiLU
  EXPECT_EQ((*steps)[1].operand, Operand::kNone);
  EXPECT_EQ((*steps)[2].mode, CUDNN_POINTWISE_ADD);
  EXPECT_EQ((*steps)[2].operand, Operand::kSum);
  EXPECT_EQ(describe((*steps)[0]) + ", " + describe((*steps)[1]) + ", " + describe((*steps)[2]), "add bias, swish, add sum");
}

TEST(CudnnGraphRules, ReluLeakyReluAndClipAreReluWithTheirClips) {
  auto steps = cudnn_graph_epilogue(
      with_post_ops({{ops::PostKind::kRelu}, {ops::PostKind::kLeakyRelu, 0.1f}, {ops::PostKind::kClip, -1.f, 6.f}, {ops::PostKind::kSigmoid}}),
      /*bias=*/false);
  ASSERT_TRUE(steps) << steps.error().message;
  ASSERT_EQ(steps->size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ((*steps)[i].mode, CUDNN_POINTWISE_RELU_FWD) << i;
  // ReLU: max(0, x); upper clip at float's largest (cuDNN computes in float32).
  EXPECT_EQ((*steps)[0].lower_clip, 0.0);
  EXPECT_EQ((*steps)[0].upper_clip, double(std::numeric_limits<float>::max()));
  EXPECT_EQ((*steps)[0].lower_clip_slope, 0.0);
  // LeakyRelu: the slope below 0.
  EXPECT_EQ((*steps)[1].lower_clip, 0.0);
  EXPECT_FLOAT_EQ(float((*steps)[1].lower_clip_slope), 0.1f);
  // Clip(-1, 6): both clips, no slope.
  EXPECT_EQ((*steps)[2].lower_clip, -1.0);
  EXPECT_EQ((*steps)[2].upper_clip, 6.0);
  EXPECT_EQ((*steps)[2].lower_clip_slope, 0.0);
  EXPECT_EQ((*steps)[3].mode, CUDNN_POINTWISE_SIGMOID_FWD);
}

TEST(CudnnGraphRules, APlainConvolutionIsTheConvolutionAlone) {
  auto steps = cudnn_graph_epilogue(with_post_ops({}), /*bias=*/false);
  ASSERT_TRUE(steps) << steps.error().message;
  EXPECT_TRUE(steps->empty());
}

TEST(CudnnGraphRules, HardSwishKeepsTheLegacyEngineAndSaysWhy) {
  auto steps = cudnn_graph_epilogue(with_post_ops({{ops::PostKind::kSilu}, {ops::PostKind::kHardSwish}}), true);
  ASSERT_FALSE(steps);
  EXPECT_EQ(steps.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(steps.error().message.find("HardSwish"), std::string::npos) << steps.error().message;
}

const std::string kGraph = "cudnn-graph:eng31/nhwc_filter/fp16", kLegacy = "cudnn:implicit_precomp_gemm/nhwc_filter/fp16";

TEST(CudnnEngineChoice, TheFasterOfTwoProbedEnginesIsKeptAndTheNoteGivesBothTimes) {
  const auto graph_faster = choose_cudnn_engine({kGraph, "", 0.081}, {kLegacy, "", 0.120});
  EXPECT_EQ(graph_faster.winner, CudnnEngineChoice::Winner::kGraph);
  EXPECT_EQ(graph_faster.note, "0.081 ms; " + kLegacy + " 0.120 ms");
  const auto legacy_faster = choose_cudnn_engine({kGraph, "", 0.2}, {kLegacy, "", 0.12});
  EXPECT_EQ(legacy_faster.winner, CudnnEngineChoice::Winner::kLegacy);
  EXPECT_EQ(legacy_faster.note, "0.120 ms; " + kGraph + " 0.200 ms");
}

TEST(CudnnEngineChoice, ATieKeepsTheLegacyEngine) {
  EXPECT_EQ(choose_cudnn_engine({kGraph, "", 0.1}, {kLegacy, "", 0.1}).winner, CudnnEngineChoice::Winner::kLegacy);
}

TEST(CudnnEngineChoice, AnEngineThatFailedItsPlanOrProbeLosesWhateverItsTime) {
  const auto c = choose_cudnn_engine({kGraph, "probe output of eng31 differs by 0.4 at element 3 (tolerance 0.005)", 0.01}, {kLegacy, "", 0.12});
  EXPECT_EQ(c.winner, CudnnEngineChoice::Winner::kLegacy);
  EXPECT_EQ(c.note, "cudnn-graph: probe output of eng31 differs by 0.4 at element 3 (tolerance 0.005)");
  const auto d = choose_cudnn_engine({kGraph, "", 0.3}, {kLegacy, "no forward algorithm for this geometry", 0.1});
  EXPECT_EQ(d.winner, CudnnEngineChoice::Winner::kGraph);
  EXPECT_EQ(d.note, "cudnn: no forward algorithm for this geometry");
}

TEST(CudnnEngineChoice, AnUnmeasuredEngineLosesToAMeasuredOne) {
  const auto c = choose_cudnn_engine({kGraph, "", 0}, {kLegacy, "", 0.12});
  EXPECT_EQ(c.winner, CudnnEngineChoice::Winner::kLegacy);
  EXPECT_EQ(c.note, "cudnn-graph: not timed");
  const auto d = choose_cudnn_engine({kGraph, "", 0.2}, {kLegacy, "", std::nan("")});
  EXPECT_EQ(d.winner, CudnnEngineChoice::Winner::kGraph);
  EXPECT_EQ(d.note, "cudnn: not timed");
}

TEST(CudnnEngineChoice, NeitherUsableNamesBothProblemsForTheDirectKernel) {
  const auto c = choose_cudnn_engine({"", "not loaded", 0}, {"", "asymmetric padding (top 0 bottom 1, left 0 right 1)", 0});
  EXPECT_EQ(c.winner, CudnnEngineChoice::Winner::kNeither);
  EXPECT_EQ(c.note, "cudnn: asymmetric padding (top 0 bottom 1, left 0 right 1); cudnn-graph: not loaded");
}

// The graph engine on for one test (a grant, as the GPU check gives each part), the process's cap
// restored after: GPU run 4 left it on from one test, every later test planned its convolutions on
// the graph engine too, and the native tests ran past their 60 s.
struct GraphPlanningOn {
  double before = cudnn_graph_planning_budget();
  explicit GraphPlanningOn(double seconds) { grant_cudnn_graph_planning(seconds); }
  ~GraphPlanningOn() { set_cudnn_graph_planning_budget(before); }
  GraphPlanningOn(const GraphPlanningOn&) = delete;
  GraphPlanningOn& operator=(const GraphPlanningOn&) = delete;
};

TEST(CudnnGraphPlanning, AGrantIsOnTopOfWhatIsSpentZeroTurnsItOffAndTheCapIsRestoredAfterATest) {
  const double before = cudnn_graph_planning_budget();
  {
    const GraphPlanningOn on(7.5);
    EXPECT_NEAR(cudnn_graph_planning_budget(), cudnn_graph_planning_spent() + 7.5, 1e-6);
    grant_cudnn_graph_planning(0);
    EXPECT_EQ(cudnn_graph_planning_budget(), 0.0);
    grant_cudnn_graph_planning(2);
    EXPECT_NEAR(cudnn_graph_planning_budget(), cudnn_graph_planning_spent() + 2, 1e-6);
  }
  EXPECT_EQ(cudnn_graph_planning_budget(), before);
}

// GPU run 4: float32 nodes on tensor-core (TF32) engines missed the CPU by 3e-4; fp16 wants them.
// GPU run 5: float32 graphs planned slowly and made the bundled model twice as slow.
TEST(CudnnEngineRefusal, OnlyFp16NodesArePlannedOnTheGraphEngine) {
  EXPECT_EQ(cudnn_graph_dtype_refusal(true), "");
  EXPECT_EQ(cudnn_graph_dtype_refusal(false), "float16 nodes only");
}

TEST(CudnnEngineRefusal, Float32RefusesTensorCoreAndDownConvertingEnginesFp16OnlyReducedPrecisionReductions) {
  using N = cudnnBackendNumericalNote_t;
  const std::vector<N> tc{CUDNN_NUMERICAL_NOTE_TENSOR_CORE}, down{CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS},
      reduced{CUDNN_NUMERICAL_NOTE_TENSOR_CORE, CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION},
      plain{CUDNN_NUMERICAL_NOTE_WINOGRAD, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC};
  EXPECT_EQ(cudnn_engine_refusal(false, tc), "tensor cores (TF32) for a float32 node");
  EXPECT_EQ(cudnn_engine_refusal(false, down), "converts a float32 node's inputs down");
  EXPECT_EQ(cudnn_engine_refusal(false, plain), "");
  EXPECT_EQ(cudnn_engine_refusal(false, {}), "");
  EXPECT_EQ(cudnn_engine_refusal(true, tc), "");
  EXPECT_EQ(cudnn_engine_refusal(true, down), "");
  EXPECT_EQ(cudnn_engine_refusal(true, reduced), "reduces in reduced precision");
  EXPECT_EQ(cudnn_engine_refusal(false, reduced), "tensor cores (TF32) for a float32 node");
}

// The geometries of the legacy engine's test (cudnn_conv_test.cpp), NHWC on both sides as the
// plans lay them out: input channels, output channels, size, kernel, stride, groups.
struct Geometry {
  int64_t c, oc, hw, k, s, group;
};
const Geometry kYolov8nGeometries[] = {{3, 16, 320, 3, 2, 1},  {16, 32, 160, 3, 2, 1}, {32, 32, 80, 1, 1, 1},
                                       {16, 16, 80, 3, 1, 1},  {64, 128, 40, 3, 2, 1}, {256, 128, 10, 1, 1, 1},
                                       {64, 64, 40, 3, 1, 1},  {64, 80, 40, 1, 1, 1},  {32, 32, 40, 3, 1, 32}};

std::string name(const Geometry& v) {
  return std::to_string(v.c) + "->" + std::to_string(v.oc) + " " + std::to_string(v.k) + "x" + std::to_string(v.k) + "/" + std::to_string(v.s) +
         (v.group > 1 ? " groups " + std::to_string(v.group) : "") + " at " + std::to_string(v.hw);
}

// bias, SiLU and the residual sum after the convolution, NHWC input and output.
ConvParams params(const Geometry& v, int64_t n) {
  ConvParams p = with_post_ops({{ops::PostKind::kSilu}, {ops::PostKind::kSum}});
  const int64_t pad = v.k / 2, o = (v.hw + 2 * pad - v.k) / v.s + 1;
  p.n = n, p.c = v.c, p.h = p.w = v.hw, p.oc = v.oc, p.kh = p.kw = v.k, p.oh = p.ow = o, p.group = v.group;
  p.sh = p.sw = v.s, p.pt = p.pl = pad;
  p.src_nhwc = p.dst_nhwc = true;
  return p;
}

CudnnConvShape shape_of(const ConvParams& p) {
  CudnnConvShape s;
  s.x_dims = {int(p.n), int(p.c), int(p.h), int(p.w)};
  s.x_strides = {int(p.h * p.w * p.c), 1, int(p.w * p.c), int(p.c)};
  s.y_dims = {int(p.n), int(p.oc), int(p.oh), int(p.ow)};
  s.y_strides = {int(p.oh * p.ow * p.oc), 1, int(p.ow * p.oc), int(p.oc)};
  s.w_dims = {int(p.oc), int(p.c / p.group), int(p.kh), int(p.kw)};
  s.pad_h = int(p.pt), s.pad_w = int(p.pl), s.stride_h = int(p.sh), s.stride_w = int(p.sw);
  s.dilation_h = s.dilation_w = 1, s.groups = int(p.group);
  return s;
}

// Where libcudnn.so.9 loads (no GPU needed): the fused graph's operations (tensors, convolution,
// the pointwise steps) are made and finalized by this cuDNN, fp16 and fp32, in every post-op form
// the rules produce; what the attributes' names and types say is what cuDNN accepts. (The
// operation graph, its heuristics and its plan need a handle, so a GPU: the GPU tests below.)
TEST(CudnnGraphOperations, TheFusedConvolutionsOperationsFinalizeInThisCudnn) {
  const CudnnLibrary* lib = CudnnLibrary::shared();
  if (!lib) GTEST_SKIP() << CudnnLibrary::shared_problem();
  ASSERT_TRUE(lib->has_backend_api()) << lib->backend_api_problem();
  const ConvParams yolo = params(kYolov8nGeometries[4], 2);
  const std::vector<ConvParams> cases = {
      yolo, with_post_ops({}), with_post_ops({{ops::PostKind::kRelu}, {ops::PostKind::kLeakyRelu, 0.1f}, {ops::PostKind::kClip, -1.f, 6.f},
                                             {ops::PostKind::kSigmoid}})};
  for (const bool half : {true, false})
    for (size_t i = 0; i < cases.size(); ++i) {
      SCOPED_TRACE(std::string(half ? "fp16" : "fp32") + " case " + std::to_string(i));
      auto steps = cudnn_graph_epilogue(cases[i], i != 1);
      ASSERT_TRUE(steps) << steps.error().message;
      for (const bool nhwc_filter : {true, false}) {
        auto ops = cudnn_graph_operations(*lib, shape_of(cases[i]), nhwc_filter, half, *steps);
        ASSERT_TRUE(ops) << ops.error().message;
        EXPECT_EQ(*ops, 1 + steps->size());
      }
    }
}

// The same check refuses what cuDNN cannot compute (so the test above has teeth): an output size
// the convolution does not produce, the one line naming the cuDNN call that refused.
TEST(CudnnGraphOperations, AnOutputOfTheWrongSizeIsRefusedNamingTheCall) {
  const CudnnLibrary* lib = CudnnLibrary::shared();
  if (!lib) GTEST_SKIP() << CudnnLibrary::shared_problem();
  ASSERT_TRUE(lib->has_backend_api()) << lib->backend_api_problem();
  const ConvParams p = params(kYolov8nGeometries[4], 2);
  CudnnConvShape wrong = shape_of(p);
  wrong.y_dims[2] += 1;
  wrong.y_strides[0] += wrong.y_strides[2];
  auto steps = cudnn_graph_epilogue(p, true);
  ASSERT_TRUE(steps) << steps.error().message;
  auto ops = cudnn_graph_operations(*lib, wrong, true, true, *steps);
  ASSERT_FALSE(ops);
  EXPECT_NE(ops.error().message.find("cudnnBackendFinalize(convolution forward)"), std::string::npos) << ops.error().message;
  EXPECT_EQ(ops.error().message.find('\n'), std::string::npos);
}

TEST(CudnnLibrary, TheProcessCudnnHasTheBackendApi) {
  const CudnnLibrary* lib = CudnnLibrary::shared();
  if (!lib) GTEST_SKIP() << CudnnLibrary::shared_problem();
  EXPECT_TRUE(lib->has_backend_api()) << lib->backend_api_problem();
  EXPECT_TRUE(lib->backend_api_problem().empty());
}

// n values of the node's storage type in device memory, uniform in [-1, 1).
Status random_device(DeviceMemory& m, size_t n, bool half, std::mt19937& rng) { return upload(m, random_values(n, rng), half); }

// On a GPU: each YOLOv8n geometry at batch 2 (the probe ran at batch 1) through the graph kernel,
// with bias, SiLU and a residual sum, and through the direct kernel on other random data than the
// probe's: the outputs agree within the probe's tolerance. The graph engine must take every
// ungrouped geometry; where it refuses the grouped one, the test says why.
void expect_graph_kernel_matches_direct(bool half) {
  for (const Geometry& v : kYolov8nGeometries) {
    SCOPED_TRACE(name(v) + (half ? " fp16" : " fp32"));
    const ConvParams p = params(v, 2);
    const CudnnConvShape shape = shape_of(p);
    std::mt19937 rng(77);
    const size_t xn = p.n * p.c * p.h * p.w, wn = p.oc * (p.c / p.group) * p.kh * p.kw, yn = p.n * p.oc * p.oh * p.ow;
    const std::vector<float> weights = random_values(wn, rng);
    auto kernel = create_cudnn_graph_conv_kernel(p, shape, oihw_to_ohwi(weights, shape.w_dims), true, true, half);
    if (!kernel) {
      if (v.group > 1) {
        std::printf("[ note ] %s: the graph engine refuses it: %s\n", name(v).c_str(), kernel.error().message.c_str());
        continue;
      }
      ADD_FAILURE() << kernel.error().message;
      continue;
    }
    EXPECT_EQ((*kernel)->implementation().rfind("cudnn-graph:eng", 0), 0u) << (*kernel)->implementation();
    EXPECT_EQ((*kernel)->implementation().ends_with("/nhwc_filter/fp16"), half) << (*kernel)->implementation();
    DeviceMemory x, w, b, s, y, y_direct, scratch;
    ASSERT_TRUE(random_device(x, xn, half, rng));
    ASSERT_TRUE(upload(w, weights, half));
    ASSERT_TRUE(random_device(b, p.oc, half, rng));
    ASSERT_TRUE(random_device(s, yn, half, rng));
    const size_t es = half ? 2 : 4;
    ASSERT_EQ(cudaMalloc(&y.p, yn * es), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&y_direct.p, yn * es), cudaSuccess);
    ASSERT_EQ(cudaMemset(y.p, 0xFF, yn * es), cudaSuccess);
    if ((*kernel)->scratch_bytes()) ASSERT_EQ(cudaMalloc(&scratch.p, (*kernel)->scratch_bytes()), cudaSuccess);
    const DType t = half ? DType::kFloat16 : DType::kFloat32;
    const TensorRef in[4] = {TensorRef(t, Shape{p.n, p.c, p.h, p.w}, x.p), TensorRef(t, Shape{p.oc, p.c / p.group, p.kh, p.kw}, w.p),
                             TensorRef(t, Shape{p.oc}, b.p), TensorRef(t, Shape{p.n, p.oc, p.oh, p.ow}, s.p)};
    const TensorRef out(t, Shape{p.n, p.oc, p.oh, p.ow}, y.p);
    const ExecContext ctx{1, static_cast<unsigned char*>(scratch.p), nullptr};
    const Status ran = (*kernel)->run(in, std::span<const TensorRef>(&out, 1), ctx);
    ASSERT_TRUE(ran) << ran.error().message;
    const int e = half ? launch_conv_direct(p, static_cast<const __half*>(x.p), static_cast<const __half*>(w.p), static_cast<const __half*>(b.p),
                                            static_cast<const __half*>(s.p), static_cast<__half*>(y_direct.p), nullptr)
                       : launch_conv_direct(p, static_cast<const float*>(x.p), static_cast<const float*>(w.p), static_cast<const float*>(b.p),
                                            static_cast<const float*>(s.p), static_cast<float*>(y_direct.p), nullptr);
    ASSERT_EQ(e, 0);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> got, want;
    ASSERT_TRUE(download(got, y.p, yn, half));
    ASSERT_TRUE(download(want, y_direct.p, yn, half));
    EXPECT_EQ(cudnn_probe_disagreement(got, want, half ? kCudnnFp16ProbeTolerance : kCudnnFp32ProbeTolerance), "");
  }
}

TEST(CudnnGraphConv, Yolov8nGeometriesThroughTheGraphEngineMatchTheDirectKernel) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  if (!CudnnLibrary::shared()) GTEST_SKIP() << CudnnLibrary::shared_problem();
  expect_graph_kernel_matches_direct(false);
}

TEST(CudnnGraphConv, Yolov8nGeometriesThroughTheGraphEngineInFp16MatchTheDirectKernel) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  if (!CudnnLibrary::shared()) GTEST_SKIP() << CudnnLibrary::shared_problem();
  expect_graph_kernel_matches_direct(true);
}

// On a GPU: the bundled detector (its dynamic-batch twin: GPU run 5 failed on the static one at
// batch 2) in fp16 and fp32 at batch 2 gives the CPU's outputs with every convolution on one of
// the two cuDNN engines; in fp16 the graph engine planned and passed its probe for some of them
// (it runs them where it measured faster; its time is in the note otherwise), unless this
// process's graph planning budget was spent before (then said, not failed); fp32 keeps the legacy
// engine.
TEST(CudnnGraphConv, TheBundledModelMatchesTheCpuWithConvolutionsOnEitherCudnnEngine) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  if (!CudnnLibrary::shared()) GTEST_SKIP() << CudnnLibrary::shared_problem();
  // The graph engine is off by default until a GPU run proves it: on for this test, as the GPU check does.
  const GraphPlanningOn on(60);
  auto m = NativeModel::load(std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8_dynamic.onnx");
  ASSERT_TRUE(m) << m.error().message;
  HostTensor x(DType::kFloat32, Shape{2, 3, 256, 256});
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  TensorRef ref = x.ref();
  std::vector<HostTensor> cpu_out;
  auto cpu = NativeSession::create(*m, SessionOptions{2});
  ASSERT_TRUE(cpu) << cpu.error().message;
  const Status cpu_ran = (*cpu)->run(std::span<const TensorRef>(&ref, 1), cpu_out);
  ASSERT_TRUE(cpu_ran) << cpu_ran.error().message;
  for (const bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    SessionOptions so{2};
    so.backends = {*cuda};
    so.device_fp16 = fp16;
    auto gpu = NativeSession::create(*m, so);
    ASSERT_TRUE(gpu) << gpu.error().message;
    auto summary = (*gpu)->plan_summary({x.shape()});
    ASSERT_TRUE(summary) << summary.error().message;
    int convs = 0, graph_kept = 0, graph_probed = 0, budget_spent = 0;
    for (const auto& st : summary->steps) {
      const std::string& impl = st.implementation;
      const bool legacy = impl.rfind("cudnn:", 0) == 0, graph = impl.rfind("cudnn-graph:", 0) == 0;
      if (!legacy && !graph && impl.rfind("direct", 0) != 0) continue;
      ++convs;
      EXPECT_TRUE(legacy || graph) << st.label << ": " << impl;
      graph_kept += graph;
      graph_probed += graph || impl.find("; cudnn-graph:eng") != std::string::npos;
      budget_spent += impl.find("graph planning budget is spent") != std::string::npos;
    }
    std::printf("[ note ] %s: %d convolutions, %d on the graph engine, %d where it passed its probe, %d past the planning budget\n",
                fp16 ? "fp16" : "fp32", convs, graph_kept, graph_probed, budget_spent);
    EXPECT_GT(convs, 0);
    if (fp16 && budget_spent == 0) EXPECT_GT(graph_probed, 0);
    if (!fp16) EXPECT_EQ(graph_kept, 0);
    std::vector<HostTensor> gpu_out;
    const Status gpu_ran = (*gpu)->run(std::span<const TensorRef>(&ref, 1), gpu_out);
    ASSERT_TRUE(gpu_ran) << gpu_ran.error().message;
    ASSERT_EQ(gpu_out.size(), cpu_out.size());
    // Within the whole-model tolerance of the largest output, as the GPU check's parity.
    for (size_t o = 0; o < cpu_out.size(); ++o) {
      double max_diff = 0, max_ref = 0;
      for (int64_t i = 0; i < cpu_out[o].numel(); ++i) {
        max_diff = std::max(max_diff, std::fabs(double(gpu_out[o].as<float>()[i]) - cpu_out[o].as<float>()[i]));
        max_ref = std::max(max_ref, std::fabs(double(cpu_out[o].as<float>()[i])));
      }
      EXPECT_LE(max_diff, (fp16 ? conformance::kFp16ModelTolerance : conformance::kFp32ModelTolerance) * max_ref) << "output " << o;
    }
  }
}

}  // namespace
}  // namespace sd::native::cuda

#endif  // STREAMDET_HAVE_CUDA
