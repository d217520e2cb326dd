// The backend seam of the native engine, through a test device backend (fake_device_backend.h)
// whose kernels refuse memory that is not the device's: nodes go to the first backend that
// supports them and the rest to the CPU, copies are inserted exactly where a tensor crosses
// between the two (and shared by every reader), constants are uploaded once, results equal the
// CPU alone, and a run allocates nothing and creates no stream.
#include <gtest/gtest.h>

#include <random>

#include "engine/native/backend.h"
#include "engine/native/session.h"
#include "fake_device_backend.h"
#include "onnx_builder.h"

namespace sd::native {
namespace {

using test::FakeDeviceBackend;
using test::OnnxBuilder;

HostTensor random_tensor(const Shape& shape, uint32_t seed) {
  HostTensor t(DType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = u(rng);
  return t;
}

std::shared_ptr<const NativeModel> load(const std::string& bytes, bool optimize = false) {
  LoadOptions lo;
  lo.optimize = optimize;
  auto m = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", lo);
  EXPECT_TRUE(m) << (m ? "" : m.error().message);
  return m ? *m : nullptr;
}

struct Outcome {
  std::vector<HostTensor> outputs;
  PlanSummary summary;
};

Outcome run_on(const std::shared_ptr<const NativeModel>& model, std::vector<std::shared_ptr<const Backend>> backends,
               const HostTensor& x, bool channels_last = false) {
  SessionOptions so;
  so.threads = 2;
  so.channels_last = channels_last;
  so.backends = std::move(backends);
  auto s = NativeSession::create(model, so);
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  Outcome o;
  if (!s) return o;
  auto summary = (*s)->plan_summary({x.shape()});
  EXPECT_TRUE(summary) << (summary ? "" : summary.error().message);
  if (summary) o.summary = *summary;
  TensorRef ref = x.ref();
  auto st = (*s)->run(std::span<const TensorRef>(&ref, 1), o.outputs);
  EXPECT_TRUE(st) << (st ? "" : st.error().message);
  return o;
}

void expect_same(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape());
    for (int64_t k = 0; k < a[i].numel(); ++k) ASSERT_EQ(a[i].as<float>()[k], b[i].as<float>()[k]) << "output " << i << " at " << k;
  }
}

int steps_on(const PlanSummary& s, const std::string& backend) {
  for (const auto& b : s.backends)
    if (b.name == backend) return b.steps;
  return -1;
}

// x -> Conv -> Relu -> Add(const) -> Sigmoid -> y, unoptimized so the nodes stay as written.
std::string conv_chain_model() {
  OnnxBuilder b;
  b.input("x", {1, 4, 10, 10});
  b.random_initializer("w", {8, 4, 3, 3}, -0.5f, 0.5f);
  b.random_initializer("bias", {8}, -0.1f, 0.1f);
  b.random_initializer("k", {1, 8, 1, 1}, -1.f, 1.f);
  auto* c = b.node("Conv", {"x", "w", "bias"}, {"c"});
  OnnxBuilder::attr_ints(c, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"});
  b.node("Add", {"r", "k"}, {"a"});
  b.node("Sigmoid", {"a"}, {"y"});
  b.output("y");
  return b.bytes();
}

TEST(Backend, TheCpuAloneRunsEveryNodeWithoutCopies) {
  auto model = load(conv_chain_model());
  ASSERT_TRUE(model);
  HostTensor x = random_tensor(Shape{1, 4, 10, 10}, 1);
  Outcome cpu = run_on(model, {}, x);
  ASSERT_EQ(cpu.summary.backends.size(), 1u);
  EXPECT_EQ(cpu.summary.backends[0].name, "cpu");
  EXPECT_EQ(cpu.summary.backends[0].steps, 4);
  EXPECT_EQ(cpu.summary.copies, 0);
  EXPECT_NE(cpu.summary.backends[0].description.find("oneDNN"), std::string::npos);
}

TEST(Backend, UnsupportedNodesFallBackToTheCpuWithACopyAtEachCrossing) {
  auto model = load(conv_chain_model());
  ASSERT_TRUE(model);
  HostTensor x = random_tensor(Shape{1, 4, 10, 10}, 2);
  Outcome cpu = run_on(model, {}, x);
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{"Conv", "Add"});
  Outcome mixed = run_on(model, {device}, x);
  // host x -> [copy] Conv on test -> [copy] Relu on cpu -> [copy] Add on test -> [copy] Sigmoid on cpu
  EXPECT_EQ(steps_on(mixed.summary, "test"), 2);
  EXPECT_EQ(steps_on(mixed.summary, "cpu"), 2);
  EXPECT_EQ(mixed.summary.copies, 4);
  std::vector<std::string> order;
  for (const auto& st : mixed.summary.steps) order.push_back(st.copy ? "copy to " + st.label.substr(8) : st.backend);
  EXPECT_EQ(order, (std::vector<std::string>{"copy to test", "test", "copy to cpu", "cpu", "copy to test", "test", "copy to cpu", "cpu"}));
  expect_same(mixed.outputs, cpu.outputs);
  // Per run: the four copies, and each backend's run begun and ended once.
  const int copies_before = device->fake_counters().copies, begun = device->fake_counters().begin_runs;
  TensorRef ref = x.ref();
  SessionOptions so;
  so.backends = {device};
  auto s = NativeSession::create(model, so);
  ASSERT_TRUE(s);
  std::vector<HostTensor> out;
  ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&ref, 1), out));
  EXPECT_EQ(device->fake_counters().copies - copies_before, 4 + 3);  // and the uploads of w, bias and k, at plan time
  EXPECT_EQ(device->fake_counters().begin_runs - begun, 1);
  EXPECT_EQ(device->fake_counters().end_runs, device->fake_counters().begin_runs);
}

TEST(Backend, ADeviceThatRunsEverythingCopiesOnlyTheInputInAndTheOutputOut) {
  for (bool channels_last : {false, true}) {
    SCOPED_TRACE(channels_last ? "channels-last" : "plain");
    auto model = load(conv_chain_model(), /*optimize=*/true);
    ASSERT_TRUE(model);
    HostTensor x = random_tensor(Shape{1, 4, 10, 10}, 3);
    Outcome cpu = run_on(model, {}, x, channels_last);
    auto device = std::make_shared<FakeDeviceBackend>();
    Outcome all = run_on(model, {device}, x, channels_last);
    EXPECT_EQ(steps_on(all.summary, "cpu"), 0);
    EXPECT_EQ(steps_on(all.summary, "test"), steps_on(cpu.summary, "cpu"));
    EXPECT_EQ(all.summary.copies, 2);
    expect_same(all.outputs, cpu.outputs);
  }
}

TEST(Backend, ATensorReadByManyNodesOnTheDeviceIsCopiedOnce) {
  // x feeds three device nodes; their results meet in a CPU node, then a device node.
  OnnxBuilder b;
  b.input("x", {2, 3, 5});
  b.node("Relu", {"x"}, {"r"});
  b.node("Neg", {"x"}, {"n"});
  b.node("Abs", {"x"}, {"a"});
  b.node("Sum", {"r", "n", "a"}, {"s"});
  b.node("Sigmoid", {"s"}, {"y"});
  b.output("y");
  auto model = load(b.bytes());
  ASSERT_TRUE(model);
  HostTensor x = random_tensor(Shape{2, 3, 5}, 4);
  Outcome cpu = run_on(model, {}, x);
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{"Relu", "Neg", "Abs", "Sigmoid"});
  Outcome mixed = run_on(model, {device}, x);
  // x in once; r, n, a out; s in; y out.
  EXPECT_EQ(mixed.summary.copies, 1 + 3 + 1 + 1);
  expect_same(mixed.outputs, cpu.outputs);
}

TEST(Backend, ViewsStayOnTheDeviceWithoutCopies) {
  // Reshape and a leading-axis Split are views of their input in the device's arena.
  OnnxBuilder b;
  b.input("x", {1, 4, 6});
  b.initializer_i64("shape", {2}, {4, 6});
  b.initializer_i64("parts", {2}, {1, 3});
  b.node("Relu", {"x"}, {"r"});
  b.node("Reshape", {"r", "shape"}, {"v"});
  auto* sp = b.node("Split", {"v", "parts"}, {"p", "q"});
  OnnxBuilder::attr_int(sp, "axis", 0);
  b.node("Neg", {"q"}, {"y"});
  b.node("Abs", {"p"}, {"z"});
  b.output("y");
  b.output("z");
  auto model = load(b.bytes());
  ASSERT_TRUE(model);
  HostTensor x = random_tensor(Shape{1, 4, 6}, 5);
  Outcome cpu = run_on(model, {}, x);
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{"Relu", "Neg", "Abs"});
  Outcome dev = run_on(model, {device}, x);
  EXPECT_EQ(steps_on(dev.summary, "test"), 3);
  EXPECT_EQ(steps_on(dev.summary, "cpu"), 0);
  EXPECT_EQ(dev.summary.copies, 3);  // x in, y and z out
  expect_same(dev.outputs, cpu.outputs);
}

TEST(Backend, AConstantOutputAndAnInputOutputComeBackFromTheHost) {
  OnnxBuilder b;
  b.input("x", {3});
  b.initializer("c", {3}, {1.f, 2.f, 3.f});
  b.node("Identity", {"c"}, {"k"});
  b.node("Neg", {"x"}, {"n"});
  b.output("k");
  b.output("x");
  b.output("n");
  auto model = load(b.bytes());
  ASSERT_TRUE(model);
  HostTensor x = random_tensor(Shape{3}, 6);
  Outcome cpu = run_on(model, {}, x);
  Outcome dev = run_on(model, {std::make_shared<FakeDeviceBackend>()}, x);
  expect_same(dev.outputs, cpu.outputs);
  EXPECT_EQ(dev.outputs[0].as<float>()[2], 3.f);
}

TEST(Backend, RunsAllocateNothingAndCreateNoStreams) {
  auto model = load(conv_chain_model(), true);
  ASSERT_TRUE(model);
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{"Add", "Relu", "Sigmoid", "Transpose"});
  SessionOptions so;
  so.backends = {device};
  auto s = NativeSession::create(model, so);
  ASSERT_TRUE(s);
  EXPECT_EQ(device->fake_counters().streams, 1);  // one per session, made with it
  HostTensor x = random_tensor(Shape{1, 4, 10, 10}, 7);
  TensorRef ref = x.ref();
  std::vector<HostTensor> out;
  ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&ref, 1), out));  // plans, uploads, allocates
  const int allocations = device->fake_counters().allocations, kernels = device->fake_counters().kernels;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&ref, 1), out));
  EXPECT_EQ(device->fake_counters().allocations, allocations);
  EXPECT_EQ(device->fake_counters().kernels, kernels);
  EXPECT_EQ(device->fake_counters().streams, 1);
  EXPECT_EQ(device->fake_counters().begin_runs, 6);
  EXPECT_EQ(device->fake_counters().end_runs, 6);
  // (The host side allocates nothing either: NativeEngine.SteadyStateRunsDoNotAllocate.)
}

TEST(Backend, AFailingDeviceKernelEndsTheRunWithItsErrorAndTheNextRunWorks) {
  auto model = load(conv_chain_model());
  ASSERT_TRUE(model);
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{"Conv", "Add"});
  SessionOptions so;
  so.backends = {device};
  // Launched one by one: a kernel failing while the run is recorded falls back instead
  // (GraphReplay.ARecordingThatFailsFallsBackToPlainLaunchesWithTheSameResults).
  so.cuda_graphs = false;
  auto s = NativeSession::create(model, so);
  ASSERT_TRUE(s);
  HostTensor x = random_tensor(Shape{1, 4, 10, 10}, 8);
  TensorRef ref = x.ref();
  std::vector<HostTensor> good, out;
  ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&ref, 1), good));
  device->fail_at_kernel_run(3);  // the second run's Add
  auto failed = (*s)->run(std::span<const TensorRef>(&ref, 1), out);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("Add node"), std::string::npos) << failed.error().message;
  EXPECT_NE(failed.error().message.find("injected failure"), std::string::npos);
  EXPECT_EQ(device->fake_counters().end_runs, device->fake_counters().begin_runs);  // the stream was waited for
  ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&ref, 1), out));
  expect_same(out, good);
}

TEST(Backend, TheTestDeviceRefusesHostMemory) {
  // The guard the tests above rely on: a kernel handed a host pointer fails instead of reading it.
  FakeDeviceBackend device;
  Node n;
  n.op_type = "Relu";
  n.name = "r";
  n.inputs = {0};
  n.outputs = {1};
  std::vector<ValueType> types{{DType::kFloat32, Shape{4}}};
  std::vector<const HostTensor*> consts{nullptr};
  OpContext ctx{n, 17, types, consts, types};
  auto kernel = device.create_kernel(ctx);
  ASSERT_TRUE(kernel);
  auto stream = device.create_stream(1);
  ASSERT_TRUE(stream);
  ASSERT_TRUE(device.begin_run(**stream));
  HostTensor host(DType::kFloat32, Shape{4});
  auto mem = device.allocate(16);
  ASSERT_TRUE(mem);
  const Device dev{DeviceKind::kTest, 0};
  TensorRef in{DType::kFloat32, Shape{4}, host.data(), dev}, out{DType::kFloat32, Shape{4}, mem->data(), dev};
  ExecContext ec{1, nullptr, stream->get()};
  EXPECT_FALSE((*kernel)->run(std::span<const TensorRef>(&in, 1), std::span<const TensorRef>(&out, 1), ec));
  in.data = mem->data();
  EXPECT_TRUE((*kernel)->run(std::span<const TensorRef>(&in, 1), std::span<const TensorRef>(&out, 1), ec));
  in.device = Device{};
  EXPECT_FALSE((*kernel)->run(std::span<const TensorRef>(&in, 1), std::span<const TensorRef>(&out, 1), ec));
  ASSERT_TRUE(device.end_run(**stream));
}

TEST(Backend, DeviceMemoryIsGivenBackWhenTheSessionEnds) {
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{"Conv", "Add"});
  {
    auto model = load(conv_chain_model());
    ASSERT_TRUE(model);
    SessionOptions so;
    so.backends = {device};
    auto s = NativeSession::create(model, so);
    ASSERT_TRUE(s);
    HostTensor x = random_tensor(Shape{1, 4, 10, 10}, 9);
    TensorRef ref = x.ref();
    std::vector<HostTensor> out;
    ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&ref, 1), out));
    EXPECT_GT(device->fake_counters().allocations, 0);
  }
  EXPECT_EQ(device->fake_counters().frees, device->fake_counters().allocations);
}

}  // namespace
}  // namespace sd::native
