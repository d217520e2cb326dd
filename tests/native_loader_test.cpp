// Malformed and unsupported models are one-line errors naming the file and the problem, never a
// crash: truncated protobuf, missing initializer, wrong tensor sizes, cycles, unsupported ops and
// opsets, external data escaping the model's folder. And parity of the bundled tiny model with
// OpenCV DNN.
#include <gtest/gtest.h>

#include <cmath>
#include <chrono>
#include <limits>
#include <filesystem>
#include <functional>
#include <fstream>

#include <opencv2/imgproc.hpp>

#include "engine/engine_registry.h"
#include "engine/native/session.h"
#include "model/model_info.h"
#include "onnx_builder.h"
#include "postprocess/decoder.h"
#include "postprocess/postprocessor.h"
#include "preprocess/letterbox.h"
#include "synthetic/scene.h"
#include "test_util.h"

namespace sd::native {
namespace {

using test::OnnxBuilder;

Error load_error(const std::string& bytes, const std::string& base_dir = ".") {
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), base_dir);
  EXPECT_FALSE(m);
  return m ? Error{} : m.error();
}

OnnxBuilder conv_model() {
  OnnxBuilder b;
  b.input("x", {1, 3, 8, 8});
  b.random_initializer("w", {4, 3, 3, 3}, -1, 1);
  b.node("Conv", {"x", "w"}, {"y"});
  b.output("y");
  return b;
}

TEST(NativeLoader, TruncatedProtobufIsAModelError) {
  std::string bytes = conv_model().bytes();
  for (size_t cut : {size_t{0}, size_t{1}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 3}) {
    Error e = load_error(bytes.substr(0, cut));
    EXPECT_EQ(e.code, ErrorCode::kModel) << cut;
    EXPECT_FALSE(e.message.empty());
  }
}

TEST(NativeLoader, MissingFileNamesThePath) {
  auto m = NativeModel::load("/nonexistent/model.onnx");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::kModel);
  EXPECT_NE(m.error().message.find("/nonexistent/model.onnx"), std::string::npos);
}

TEST(NativeLoader, MissingInitializerNamesTheInputAndNode) {
  OnnxBuilder b;
  b.input("x", {1, 3, 8, 8});
  b.node("Conv", {"x", "weights_nobody_made"}, {"y"});
  b.output("y");
  Error e = load_error(b.bytes());
  EXPECT_EQ(e.code, ErrorCode::kModel);
  EXPECT_NE(e.message.find("weights_nobody_made"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("Conv_1"), std::string::npos) << e.message;
}

TEST(NativeLoader, WrongInitializerSizeIsRefused) {
  OnnxBuilder b;
  b.input("x", {1, 3, 8, 8});
  b.initializer("w", {4, 3, 3, 3}, std::vector<float>(10, 1.f));  // 108 expected
  b.node("Conv", {"x", "w"}, {"y"});
  b.output("y");
  Error e = load_error(b.bytes());
  EXPECT_EQ(e.code, ErrorCode::kModel);
  EXPECT_NE(e.message.find("'w'"), std::string::npos) << e.message;
}

TEST(NativeLoader, CycleIsRefusedNamingANode) {
  OnnxBuilder b;
  b.input("x", {1, 4});
  b.node("Add", {"x", "b"}, {"a"});
  b.node("Relu", {"a"}, {"b"});
  b.output("b");
  Error e = load_error(b.bytes());
  EXPECT_EQ(e.code, ErrorCode::kModel);
  EXPECT_NE(e.message.find("cycle"), std::string::npos) << e.message;
}

TEST(NativeLoader, UnsupportedOpNamesOpNodeAndOpset) {
  OnnxBuilder b(17);
  b.input("x", {1, 4});
  b.node("Relu", {"x"}, {"r"});
  b.node("GridSample", {"r", "r"}, {"y"});
  b.output("y");
  Error e = load_error(b.bytes());
  EXPECT_EQ(e.code, ErrorCode::kModel);
  EXPECT_NE(e.message.find("GridSample"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("GridSample_2"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("opset 17"), std::string::npos) << e.message;
}

TEST(NativeLoader, UnsupportedOpsetAndDomainAreRefused) {
  OnnxBuilder b(99);
  b.input("x", {1, 4});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  Error e = load_error(b.bytes());
  EXPECT_EQ(e.code, ErrorCode::kUnsupported);
  EXPECT_NE(e.message.find("opset 99"), std::string::npos) << e.message;

  OnnxBuilder c;
  c.input("x", {1, 4});
  c.node("Relu", {"x"}, {"y"})->set_domain("com.microsoft");
  c.output("y");
  Error e2 = load_error(c.bytes());
  EXPECT_NE(e2.message.find("com.microsoft"), std::string::npos) << e2.message;
}

TEST(NativeLoader, ExternalDataMayNotEscapeTheModelFolder) {
  test::TempDir dir;
  { std::ofstream(dir.file("w.bin"), std::ios::binary).write(std::string(4 * 108, '\0').data(), 4 * 108); }
  for (const std::string& location : {std::string("../w.bin"), std::string("/etc/passwd"), std::string("w.bin")}) {
    OnnxBuilder b;
    b.input("x", {1, 3, 8, 8});
    auto* t = b.model().mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {4, 3, 3, 3}) t->add_dims(d);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    kv->set_value(location);
    b.node("Conv", {"x", "w"}, {"y"});
    b.output("y");
    std::string bytes = b.bytes();
    auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), (dir.path() / "sub" / "..").string());
    if (location == "w.bin") {
      EXPECT_TRUE(m) << (m ? "" : m.error().message);  // inside the folder: fine
    } else {
      ASSERT_FALSE(m) << location;
      EXPECT_NE(m.error().message.find(location), std::string::npos) << m.error().message;
    }
  }
}

TEST(NativeLoader, RandomBytesNeverCrash) {
  // A poor man's fuzz pass in the suite (the libFuzzer target does the real job): flip bytes of
  // a valid model and load it; any outcome but a crash is fine.
  std::string good = conv_model().bytes();
  std::mt19937 rng(1);
  int loaded = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string bytes = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".");
    if (!m) continue;
    ++loaded;
    auto s = NativeSession::create(*m, SessionOptions{1});
    if ((*m)->inputs().size() != 1 || (*m)->inputs()[0].dtype != DType::kFloat32 || !(*m)->inputs()[0].shape.is_static()) continue;
    if ((*m)->inputs()[0].shape.numel() > (1 << 20)) continue;
    HostTensor x(DType::kFloat32, (*m)->inputs()[0].shape);
    TensorRef ref = x.ref();
    std::vector<HostTensor> out;
    (void)(*s)->run(std::span<const TensorRef>(&ref, 1), out);
  }
  EXPECT_GT(loaded, 0);
}

// ---- Parity: the bundled tiny model through the native engine and through OpenCV DNN.
TEST(NativeParity, TinyModelMatchesOpenCvAndGivesTheSameDetections) {
  const std::string path = std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8.onnx";
  auto info = inspect_model(path);
  ASSERT_TRUE(info) << info.error().message;
  auto native = load_engine("native", *info);
  auto opencv = load_engine("opencv", *info);
  ASSERT_TRUE(native) << native.error().message;
  ASSERT_TRUE(opencv) << opencv.error().message;
  auto nc = (*native)->create_context({2});
  auto oc = (*opencv)->create_context({2});
  ASSERT_TRUE(nc && oc);
  std::vector<TensorInfo> outs = (*native)->outputs();
  auto made = make_decoder(Layout::kAuto, outs, *info, 256, 256);
  ASSERT_TRUE(made) << made.error().message;
  std::shared_ptr<const Decoder> decoder = std::move(*made);
  synth::SceneOptions so;
  so.width = 320, so.height = 192, so.seed = 4243, so.num_objects = 7;
  synth::SyntheticScene scene(so);
  cv::Mat frame;
  std::vector<synth::TruthBox> truth;
  PreprocessScratch scratch;
  PreprocessSpec spec = spec_for_layout(Layout::kYoloV8);
  Tensor input(Shape{1, 3, 256, 256});
  double worst = 0;
  int detections = 0;
  for (int f = 0; f < 8; ++f) {
    scene.render(f * 7, frame, truth);
    LetterboxTransform t = preprocess_frame(frame, cv::Size(256, 256), spec, input.data(), scratch);
    std::vector<Tensor> a, b;
    ASSERT_TRUE((*nc)->infer(input.view(), a));
    ASSERT_TRUE((*oc)->infer(input.view(), b));
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(a[0].shape(), b[0].shape());
    double scale = 0;
    for (int64_t i = 0; i < b[0].numel(); ++i) scale = std::max(scale, std::fabs(static_cast<double>(b[0].data()[i])));
    for (int64_t i = 0; i < b[0].numel(); ++i) {
      // Relative to the value, floored at 1e-3 of the output's scale (box rows reach 256, scores ~0).
      double d = std::fabs(a[0].data()[i] - b[0].data()[i]) / std::max(std::fabs(static_cast<double>(b[0].data()[i])), 1e-3 * scale);
      worst = std::max(worst, d);
    }
    Postprocessor pa(decoder, DecodeOptions{}, NmsOptions{}), pb(decoder, DecodeOptions{}, NmsOptions{});
    Detections da, db;
    std::vector<TensorView> va{a[0].view()}, vb{b[0].view()};
    pa.run(va, 0, da);
    pb.run(vb, 0, db);
    (void)t;
    ASSERT_EQ(da.size(), db.size()) << "frame " << f;
    for (size_t i = 0; i < da.size(); ++i) {
      EXPECT_EQ(da[i].class_id, db[i].class_id);
      EXPECT_NEAR(da[i].x1, db[i].x1, 0.01);
      EXPECT_NEAR(da[i].y2, db[i].y2, 0.01);
      EXPECT_NEAR(da[i].score, db[i].score, 1e-4);
    }
    detections += static_cast<int>(da.size());
  }
  std::printf("native vs OpenCV DNN on the tiny model: worst relative difference %.2e, %d detections identical\n", worst, detections);
  EXPECT_LT(worst, 1e-4);
  EXPECT_GT(detections, 20);
}

}  // namespace
}  // namespace sd::native

namespace sd::native {
namespace {

// Found by the fuzzer (fuzz/fuzz_onnx_loader.cpp): a Conv node with one input read its weights
// past the end of the input list.
TEST(NativeLoader, NodesWithTooFewInputsAreErrorsNotCrashes) {
  struct Case { const char* op; std::vector<std::string> ins; };
  for (const Case& c : {Case{"Conv", {"x"}}, Case{"Gather", {"x"}}, Case{"BatchNormalization", {"x", "x", "x"}},
                        Case{"Where", {"x", "x"}}, Case{"MatMul", {"x"}}, Case{"Conv", {"", "x"}}}) {
    OnnxBuilder b;
    b.input("x", {1, 3, 8, 8});
    b.node(c.op, c.ins, {"y"});
    b.output("y");
    std::string bytes = b.bytes();
    auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".");
    Error e;
    if (m) {
      // Accepted at load (nothing to fold): planning must refuse it.
      auto s = NativeSession::create(*m, SessionOptions{1});
      HostTensor x(DType::kFloat32, Shape{1, 3, 8, 8});
      TensorRef ref = x.ref();
      std::vector<HostTensor> out;
      auto st = (*s)->run(std::span<const TensorRef>(&ref, 1), out);
      ASSERT_FALSE(st) << c.op;
      e = st.error();
    } else {
      e = m.error();
    }
    EXPECT_EQ(e.code, ErrorCode::kModel) << c.op << ": " << e.message;
    EXPECT_NE(e.message.find(c.op), std::string::npos) << e.message;
  }
}

TEST(NativeLoader, InternalOpsAreRefusedInAFile) {
  struct Case {
    const char* op;
    std::vector<int64_t> x, w;
  };
  for (const Case& c : {Case{"FusedConv", {1, 3, 8, 8}, {4, 3, 3, 3}}, Case{"BinExpectation", {1, 4, 16, 20}, {1, 16, 1, 1}}}) {
    OnnxBuilder b;
    b.input("x", c.x);
    b.random_initializer("w", c.w, -1, 1);
    b.node(c.op, {"x", "w"}, {"y"});
    b.output("y");
    Error e = load_error(b.bytes());
    EXPECT_NE(e.message.find(c.op), std::string::npos) << e.message;
  }
}

TEST(NativeLoader, OmittedOutputsStillGetBuffers) {
  // TopK's indices output left out, Split with an unnamed output: the kernels still write them.
  OnnxBuilder b;
  b.input("x", {2, 10});
  b.initializer_i64("k", {1}, {3});
  b.node("TopK", {"x", "k"}, {"v"});
  auto* sp = b.node("Split", {"x"}, {"a", ""});
  OnnxBuilder::attr_int(sp, "axis", 1);
  b.node("Add", {"a", "a"}, {"y"});
  b.output("v");
  b.output("y");
  std::string bytes = b.bytes();
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".");
  ASSERT_TRUE(m) << m.error().message;
  auto s = NativeSession::create(*m, SessionOptions{1});
  HostTensor x(DType::kFloat32, Shape{2, 10});
  for (int i = 0; i < 20; ++i) x.as<float>()[i] = static_cast<float>(i % 7);
  TensorRef ref = x.ref();
  std::vector<HostTensor> out;
  ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&ref, 1), out));
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(out[0].as<float>()[0], 6.f);
  EXPECT_EQ(out[1].shape(), (Shape{2, 5}));
}

}  // namespace
}  // namespace sd::native

namespace sd::native {
namespace {

// Every input that ever crashed the fuzz target (tests/data/fuzz/) is replayed the same way:
// load, and when it loads, plan and run it on zeros. Any error is fine; a crash is not.
// Found by the fuzzer: a model input declared [4.6e18, 6], whose element count overflowed.
TEST(NativeLoader, ElementCountsOfDeclaredShapesSaturate) {
  const int64_t big = int64_t{4611113927693007615};
  EXPECT_EQ((Shape{big, 6}).numel(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ((Shape{big, big, 0}).numel(), 0);
  EXPECT_EQ((Shape{big, -1}).numel(), -1);
  EXPECT_EQ((Shape{3, 5, 7}).numel(), 105);
}

// Found by the fuzzer: Max(Size(x), Sigmoid(x)) read the float input as int64 (the type of the
// first), past its end. Ops whose kernel reads several inputs as one type refuse a mix at load.
TEST(NativeLoader, InputsOfMixedTypesAreAModelError) {
  for (const std::string op : {"Max", "Sum", "Concat", "Where"}) {
    OnnxBuilder b;
    b.input("x", {2, 3});
    b.initializer_i64("i", {2, 3}, {1, 2, 3, 4, 5, 6});
    if (op == "Where") {
      b.node("Greater", {"x", "x"}, {"cond"});
      b.node("Where", {"cond", "x", "i"}, {"y"});
    } else {
      auto* n = b.node(op, {"i", "x"}, {"y"});
      if (op == "Concat") OnnxBuilder::attr_int(n, "axis", 0);
    }
    b.output("y");
    const std::string bytes = b.bytes();
    auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".");
    std::string message;
    if (!m) {
      message = m.error().message;
    } else {  // the check is at planning when the types are only known then
      auto s = NativeSession::create(*m, SessionOptions{1});
      HostTensor x(DType::kFloat32, Shape{2, 3});
      TensorRef ref = x.ref();
      std::vector<HostTensor> out;
      auto st = (*s)->run(std::span<const TensorRef>(&ref, 1), out);
      ASSERT_FALSE(st) << op;
      message = st.error().message;
    }
    EXPECT_NE(message.find("(they must match)"), std::string::npos) << op << ": " << message;
  }
}

// Found by the fuzzer on a slower machine (tests/data/fuzz/typed_initializer_declares_97GB.onnx):
// an int64 initializer in the typed field declared 12125x1000x1000 values and held 150; the
// loader allocated the 97 GB first (ASan abort; without it "std::bad_alloc", naming nothing).
TEST(NativeLoader, TypedInitializerDeclaringMoreThanItHoldsIsRefusedBeforeAllocating) {
  const std::filesystem::path file =
      std::filesystem::path(STREAMDET_SOURCE_DIR) / "tests" / "data" / "fuzz" / "typed_initializer_declares_97GB.onnx";
  auto m = NativeModel::load(file.string());
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::kModel);
  EXPECT_NE(m.error().message.find("typed_initializer_declares_97GB.onnx: initializer 'w3' declares 97 GB"), std::string::npos)
      << m.error().message;
  EXPECT_NE(m.error().message.find("but holds 1.2 kB"), std::string::npos) << m.error().message;

  for (int dtype : {onnx::TensorProto::FLOAT, onnx::TensorProto::DOUBLE, onnx::TensorProto::INT32, onnx::TensorProto::UINT8,
                    onnx::TensorProto::BOOL, onnx::TensorProto::FLOAT16}) {
    OnnxBuilder b;
    b.input("x", {1});
    auto* t = b.graph().add_initializer();
    t->set_name("w");
    t->set_data_type(dtype);
    for (int64_t d : {int64_t{100000}, int64_t{100000}}) t->add_dims(d);
    for (int i = 0; i < 3; ++i) {
      if (dtype == onnx::TensorProto::FLOAT) t->add_float_data(1.f);
      else if (dtype == onnx::TensorProto::DOUBLE) t->add_double_data(1.0);
      else t->add_int32_data(1);
    }
    b.node("Identity", {"x"}, {"y"});
    b.output("y");
    const std::string bytes = b.bytes();
    auto r = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".");
    ASSERT_FALSE(r) << dtype;
    EXPECT_NE(r.error().message.find("initializer 'w' declares"), std::string::npos) << r.error().message;
  }
}

// Found by the fuzzer (tests/data/fuzz/split_sizes_overflow.onnx): Split sizes {5, INT64_MAX}
// overflowed their sum (UB) before they were compared with the axis; num_outputs 0 divided by zero.
TEST(NativeLoader, SplitSizesThatCannotAddUpAreAModelError) {
  // x [6, 2] split on axis 0 into a and c, as `split` makes the node; the run's status.
  auto run_split = [](int opset, const std::function<void(OnnxBuilder&, onnx::NodeProto*)>& split) -> Status {
    OnnxBuilder b(opset);
    b.input("x", {6, 2});
    auto* n = b.node("Split", {"x"}, {"a", "c"});
    OnnxBuilder::attr_int(n, "axis", 0);
    split(b, n);
    b.output("a");
    b.output("c");
    const std::string bytes = b.bytes();
    auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".");
    if (!m) return tl::unexpected(m.error());
    auto s = NativeSession::create(*m, SessionOptions{1});
    HostTensor x(DType::kFloat32, Shape{6, 2});
    TensorRef ref = x.ref();
    std::vector<HostTensor> out;
    return (*s)->run(std::span<const TensorRef>(&ref, 1), out);
  };
  const int64_t max = std::numeric_limits<int64_t>::max();
  const std::vector<std::vector<int64_t>> bad = {{5, max}, {max, max}, {-1, 7}, {7, -1}, {2, 3}};
  for (const auto& sizes : bad) {
    auto st = run_split(17, [&](OnnxBuilder& b, onnx::NodeProto* n) {
      b.initializer_i64("s", {2}, sizes);
      n->add_input("s");
    });
    ASSERT_FALSE(st) << sizes[0] << ", " << sizes[1];
    EXPECT_NE(st.error().message.find("split sizes do not add up to the axis (6)"), std::string::npos) << st.error().message;
  }
  for (int64_t parts : {0, -3, 5}) {
    auto st = run_split(18, [&](OnnxBuilder&, onnx::NodeProto* n) { OnnxBuilder::attr_int(n, "num_outputs", parts); });
    ASSERT_FALSE(st) << parts;
    EXPECT_NE(st.error().message.find("num_outputs"), std::string::npos) << st.error().message;
  }
}

TEST(NativeLoader, FuzzerFindingsStayFixed) {
  const std::filesystem::path dir = std::filesystem::path(STREAMDET_SOURCE_DIR) / "tests" / "data" / "fuzz";
  int cases = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ++cases;
    auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), "/nonexistent-fuzz-dir");
    if (!m) continue;
    std::vector<HostTensor> inputs;
    std::vector<TensorRef> refs;
    bool runnable = true;
    for (const auto& info : (*m)->inputs()) {
      if (!info.shape.is_static() || info.shape.numel() > (1 << 16) || info.dtype == DType::kUndefined) runnable = false;
      else inputs.emplace_back(info.dtype, info.shape);
    }
    if (!runnable) continue;
    for (auto& t : inputs) refs.push_back(t.ref());
    SessionOptions options{1};
    options.memory_limit_bytes = size_t{16} << 20;  // as the fuzz target runs it
    auto s = NativeSession::create(*m, options);
    std::vector<HostTensor> out;
    auto st = (*s)->run(refs, out);
    if (!st) EXPECT_FALSE(st.error().message.empty()) << e.path();
  }
  EXPECT_GT(cases, 0);
}

}  // namespace
}  // namespace sd::native

namespace sd::native {
namespace {

// Found by the fuzzer: constant subgraphs (Expand, ConstantOfShape, Tile of initializers) can
// describe tensors of gigabytes in a few bytes of model. Folding them at load kept them in memory
// for the model's life and allocated without bound; a run whose arena needed 4.8 GB took the
// machine down instead of failing.
std::string huge_constant_model(int64_t elements) {
  OnnxBuilder b;
  b.input("x", {1});
  b.initializer("one", {1}, {1.f});
  b.initializer_i64("shape", {1}, {elements});
  b.node("Expand", {"one", "shape"}, {"big"});
  auto* r = b.node("ReduceSum", {"big"}, {"sum"});
  OnnxBuilder::attr_int(r, "keepdims", 0);
  b.node("Add", {"sum", "x"}, {"y"});
  b.output("y");
  return b.bytes();
}

TEST(NativeLoader, LargeConstantSubgraphsRunAsStepsInsteadOfBeingFolded) {
  const int64_t n = int64_t{24} << 20;  // 96 MiB of float: over the 64 MiB fold limit
  std::string bytes = huge_constant_model(n);
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".");
  ASSERT_TRUE(m) << m.error().message;
  auto s = NativeSession::create(*m, SessionOptions{1});
  HostTensor x(DType::kFloat32, Shape{1});
  x.as<float>()[0] = 0.5f;
  TensorRef ref = x.ref();
  std::vector<HostTensor> out;
  ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&ref, 1), out));
  EXPECT_EQ(out[0].as<float>()[0], static_cast<float>(n) + 0.5f);
  // The expanded tensor lives in the session's arena, not in the model.
  EXPECT_GE((*s)->memory_stats().arena_bytes, static_cast<size_t>(n) * 4);
}

TEST(NativeLoader, ARunNeedingMoreThanTheMemoryLimitIsAClearError) {
  // Every node's output (12 MiB) is under the limit; two of them live at once are not.
  const int64_t n = int64_t{3} << 20;
  OnnxBuilder b;
  b.input("x", {n});
  b.node("Relu", {"x"}, {"a"});
  b.node("Sigmoid", {"x"}, {"b"});
  b.node("Mul", {"a", "b"}, {"y"});
  b.output("y");
  std::string bytes = b.bytes();
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".");
  ASSERT_TRUE(m) << m.error().message;
  SessionOptions options{1};
  options.memory_limit_bytes = size_t{16} << 20;
  auto s = NativeSession::create(*m, options);
  ASSERT_TRUE(s) << s.error().message;
  HostTensor x(DType::kFloat32, Shape{n});
  TensorRef ref = x.ref();
  std::vector<HostTensor> out;
  auto st = (*s)->run(std::span<const TensorRef>(&ref, 1), out);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kModel);
  EXPECT_NE(st.error().message.find("of working memory, over the memory budget of 16.8 MB"), std::string::npos) << st.error().message;
  // Refused every time, not only the first.
  EXPECT_FALSE((*s)->run(std::span<const TensorRef>(&ref, 1), out));
  // The same model runs under the default limit (the machine's memory).
  auto unlimited = NativeSession::create(*m, SessionOptions{1});
  EXPECT_TRUE((*unlimited)->run(std::span<const TensorRef>(&ref, 1), out));
}

}  // namespace
}  // namespace sd::native

namespace sd::native {
namespace {

// Loads a model of one float input and runs it once on zeros of `shape` (the plan included).
// The fuzzer's slow-unit findings below were about that time; the tests assert the results
// (no test here times itself: the suite must give the same verdict on any machine).
struct TimedRun {
  Status status;
  std::vector<HostTensor> outputs;
};

TimedRun load_and_run_once(const std::string& bytes, const Shape& shape, size_t memory_limit_bytes = 0) {
  TimedRun r;
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".");
  if (!m) {
    r.status = tl::unexpected(m.error());
    return r;
  }
  SessionOptions options{1};
  options.memory_limit_bytes = memory_limit_bytes;
  auto s = NativeSession::create(*m, options);
  HostTensor x(DType::kFloat32, shape);
  TensorRef ref = x.ref();
  r.status = (*s)->run(std::span<const TensorRef>(&ref, 1), r.outputs);
  return r;
}

// Found by the fuzzer: a Resize by 2e6 along one axis (6e9 output elements, within the shape
// checks) spent 4 s building its index tables before the memory check could refuse the plan.
TEST(NativeLoader, ANodeWhoseOutputExceedsTheMemoryLimitIsRefusedBeforeItsKernelIsBuilt) {
  OnnxBuilder b;
  b.input("x", {10, 4, 6, 6});
  b.initializer("scales", {4}, {1.f, 1.f, 2.f, 2097154.f});
  b.node("Resize", {"x", "", "scales"}, {"y"});
  b.output("y");
  const TimedRun r = load_and_run_once(b.bytes(), Shape{10, 4, 6, 6}, size_t{64} << 20);
  ASSERT_FALSE(r.status);
  EXPECT_EQ(r.status.error().code, ErrorCode::kModel);
  EXPECT_NE(r.status.error().message.find("Resize node"), std::string::npos) << r.status.error().message;
  EXPECT_NE(r.status.error().message.find("over the memory budget of 67.1 MB"), std::string::npos) << r.status.error().message;
}

// Found by the fuzzer: a Resize to 33M x 0 (an empty tensor) built a 33M-entry index table and
// took 24 s under the sanitizers. Empty outputs are computed by nothing; no kernel is built.
TEST(NativeLoader, NodesWithEmptyOutputsBuildNoKernel) {
  // Also with an extra output name the op does not produce (the second finding).
  for (const bool extra_output : {false, true}) {
    OnnxBuilder b;
    b.input("x", {1, 4, 63, 6});
    b.initializer("scales", {4}, {1.f, 1.f, 524288.f, 1e-4f});
    if (extra_output) b.node("Resize", {"x", "", "scales"}, {"r", "unused"});
    else b.node("Resize", {"x", "", "scales"}, {"r"});
    b.node("Relu", {"r"}, {"y"});
    b.output("y");
    const TimedRun r = load_and_run_once(b.bytes(), Shape{1, 4, 63, 6});
    ASSERT_TRUE(r.status) << r.status.error().message;
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_EQ(r.outputs[0].shape(), (Shape{1, 4, 63 * 524288, 0}));
  }
}

}  // namespace
}  // namespace sd::native
