// A caller that works on the device around a run (docs/gpu.md, "Frames on the GPU"): it writes an
// input where the plan's upload copy would put it (NativeSession::device_input) and reads outputs
// where the device computed them (device_output), and tells the run to skip those copies
// (NativeSession::RunOptions). Through the test device backend (fake_device_backend.h:
// asynchronous, recording graphs with the addresses they were given): the bytes the plan computes
// are the same either way (fp32 and fp16 plans, plain launches and replays), the skipped copies
// are not made (the device's copy count), a recording is made once per mode and never replayed
// by a run of another mode, and an input that cannot be bound says why.
#include <gtest/gtest.h>

#include <cstring>

#include "device_chain_model.h"
#include "engine/native/half.h"
#include "engine/native/session.h"
#include "fake_device_backend.h"
#include "onnx_builder.h"

namespace sd::native {
namespace {

using test::chain_model;
using test::FakeDeviceBackend;
using test::OnnxBuilder;
using test::random_tensor;

const std::set<std::string> kAllOps{"Conv", "Relu", "Add", "Sigmoid", "Transpose"};

struct DeviceSession {
  std::shared_ptr<FakeDeviceBackend> device;
  std::unique_ptr<NativeSession> session;
};

DeviceSession make_session(const std::shared_ptr<const NativeModel>& model, bool fp16, bool graphs,
                   std::set<std::string> ops = kAllOps) {
  DeviceSession s;
  s.device = std::make_shared<FakeDeviceBackend>(std::move(ops), Layout::kNhwc, fp16 ? DType::kFloat16 : DType::kFloat32);
  SessionOptions so;
  so.threads = 1;
  so.cuda_graphs = graphs;
  so.device_fp16 = fp16;
  so.backends = {s.device};
  auto made = NativeSession::create(model, so);
  EXPECT_TRUE(made) << (made ? "" : made.error().message);
  if (made) s.session = std::move(*made);
  return s;
}

// Writes x where the session's plan uploads input 0, as the plan stores it there.
void write_device_input(const NativeSession::DeviceInput& at, const HostTensor& x) {
  ASSERT_EQ(at.shape, x.shape());
  if (at.dtype == DType::kFloat16)
    floats_to_halves(x.as<float>(), static_cast<uint16_t*>(at.data), static_cast<size_t>(x.numel()));
  else
    std::memcpy(at.data, x.data(), x.bytes());
}

void expect_same_bytes(const HostTensor& got, const HostTensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.bytes(), want.bytes()) << what;
  ASSERT_EQ(std::memcmp(got.data(), want.data(), want.bytes()), 0) << what;
}

// One session runs each input twice: uploaded from the host, then written on the device with the
// upload skipped. Same bytes out; one copy fewer per bound run (the upload).
TEST(DeviceInput, TheBoundInputGivesTheSameBytesAsTheUploadAndSkipsIt) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  for (const bool fp16 : {false, true})
    for (const bool graphs : {false, true}) {
      SCOPED_TRACE(std::string(fp16 ? "fp16" : "fp32") + (graphs ? ", graphs" : ", plain launches"));
      DeviceSession s = make_session(model, fp16, graphs);
      ASSERT_TRUE(s.session);
      const Shape shape{2, 4, 9, 7};
      auto at = s.session->device_input(0, {shape});
      ASSERT_TRUE(at) << at.error().message;
      ASSERT_NE(at->data, nullptr) << at->why_not;
      EXPECT_EQ(at->dtype, fp16 ? DType::kFloat16 : DType::kFloat32);
      EXPECT_EQ(at->shape, shape);  // the input's own layout: the upload copy does not transpose
      EXPECT_EQ(at->backend, "test");
      EXPECT_TRUE(s.device->owns(at->data, static_cast<size_t>(shape.numel()) * (fp16 ? 2 : 4))) << "not the device's memory";
      for (uint32_t run = 0; run < 4; ++run) {
        const HostTensor x = random_tensor(shape, 2000 + run);
        TensorRef in = x.ref();
        std::vector<HostTensor> want, got;
        uint64_t copies = s.device->counters().copies;
        ASSERT_TRUE(s.session->run(std::span<const TensorRef>(&in, 1), want));
        EXPECT_EQ(s.device->counters().copies - copies, 2u) << "the input up, the output down";
        // The staging still holds x: a run that uploaded it anyway would hide a skipped write.
        // So the device gets another input than the one just run, then x again, bound.
        const HostTensor other = random_tensor(shape, 2100 + run);
        auto again = s.session->device_input(0, {shape});
        ASSERT_TRUE(again);
        ASSERT_EQ(again->data, at->data) << "the binding moved without a change of shape";
        write_device_input(*again, other);
        TensorRef bound{DType::kFloat32, shape, nullptr};  // the host's data is not read
        NativeSession::RunOptions on_device;
        on_device.inputs_on_device = 1;
        copies = s.device->counters().copies;
        auto st = s.session->run(std::span<const TensorRef>(&bound, 1), got, on_device);
        ASSERT_TRUE(st) << st.error().message;
        EXPECT_EQ(s.device->counters().copies - copies, 1u) << "the output down only";
        std::vector<HostTensor> want_other;
        TensorRef other_ref = other.ref();
        ASSERT_TRUE(s.session->run(std::span<const TensorRef>(&other_ref, 1), want_other));
        expect_same_bytes(got[0], want_other[0], "run " + std::to_string(run));
      }
    }
}

// Alternating modes (plain, input bound, output kept, both) replays one recording per mode: no
// recording per switch, and each mode's results are its own.
TEST(DeviceInput, AlternatingModesRecordsOncePerModeAndEachReplayIsRight) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  DeviceSession s = make_session(model, false, true);
  ASSERT_TRUE(s.session);
  auto cpu = NativeSession::create(model, SessionOptions{1});
  ASSERT_TRUE(cpu);
  const Shape shape{1, 4, 8, 6};
  auto at = s.session->device_input(0, {shape});
  ASSERT_TRUE(at);
  ASSERT_NE(at->data, nullptr) << at->why_not;
  for (uint32_t run = 0; run < 16; ++run) {
    const int mode = static_cast<int>(run % 4);
    SCOPED_TRACE("run " + std::to_string(run) + ", mode " + std::to_string(mode));
    const HostTensor x = random_tensor(shape, 2200 + run);
    TensorRef ref = x.ref();
    std::vector<HostTensor> want;
    ASSERT_TRUE((*cpu)->run(std::span<const TensorRef>(&ref, 1), want));
    NativeSession::RunOptions opt;
    opt.inputs_on_device = mode & 1;
    opt.outputs_on_device = (mode >> 1) & 1;
    TensorRef in = ref;
    if (opt.inputs_on_device) {
      write_device_input(*at, x);
      in.data = nullptr;
    }
    std::vector<HostTensor> got(1, HostTensor(DType::kFloat32, Shape{1}));
    got[0].as<float>()[0] = -7.f;  // a caller's stale tensor: left alone when the output stays on the device
    const uint64_t copies = s.device->counters().copies;
    auto st = s.session->run(std::span<const TensorRef>(&in, 1), got, opt);
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(s.device->counters().copies - copies, 2u - static_cast<unsigned>(opt.inputs_on_device) - static_cast<unsigned>(opt.outputs_on_device));
    auto dev = s.session->device_output(0);
    ASSERT_TRUE(dev);
    ASSERT_NE(dev->data, nullptr);
    ASSERT_EQ(std::memcmp(dev->data, want[0].data(), want[0].bytes()), 0) << "the device's output";
    if (opt.outputs_on_device) {
      ASSERT_EQ(got[0].shape(), Shape{1});
      EXPECT_EQ(got[0].as<float>()[0], -7.f) << "the host output was written";
    } else {
      expect_same_bytes(got[0], want[0], "the host output");
    }
  }
  // The first run is plain; then each of the four modes is recorded once and replayed after.
  EXPECT_EQ(s.device->fake_counters().captures, 4);
  EXPECT_EQ(s.device->fake_counters().replays, 15);
}

// Kept on the device in an fp16 plan: the device's fp16 output, whose widening is what the host
// copy would have been; with and without graphs. output_to_host makes the skipped copy late.
TEST(DeviceOutput, SkippingTheHostCopyLeavesTheDevicesOutputAsTheCopyWouldHaveBeen) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  for (const bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "graphs" : "plain launches");
    DeviceSession s = make_session(model, true, graphs);
    DeviceSession ref = make_session(model, true, graphs);
    ASSERT_TRUE(s.session && ref.session);
    for (uint32_t run = 0; run < 4; ++run) {
      const HostTensor x = random_tensor(Shape{2, 4, 6, 5}, 2300 + run);
      TensorRef in = x.ref();
      std::vector<HostTensor> want, got;
      const uint64_t ref_copies = ref.device->counters().copies;
      ASSERT_TRUE(ref.session->run(std::span<const TensorRef>(&in, 1), want));
      NativeSession::RunOptions opt;
      opt.outputs_on_device = 1;
      const uint64_t copies = s.device->counters().copies;
      ASSERT_TRUE(s.session->run(std::span<const TensorRef>(&in, 1), got, opt));
      EXPECT_EQ(s.device->counters().copies - copies, ref.device->counters().copies - ref_copies - 1) << "all but the output's";
      EXPECT_TRUE(got.size() == 1 && got[0].empty()) << "an output read on the device is not made on the host";
      auto dev = s.session->device_output(0);
      ASSERT_TRUE(dev) << dev.error().message;
      ASSERT_EQ(dev->dtype, DType::kFloat16);
      ASSERT_EQ(dev->shape, want[0].shape());
      const auto* h = static_cast<const uint16_t*>(dev->data);
      for (int64_t i = 0; i < want[0].numel(); ++i) ASSERT_EQ(half_to_float(h[i]), want[0].as<float>()[i]) << "run " << run << " at " << i;
      // Wanted on the host after all (a decode on the device that failed): the skipped copy now.
      if (run % 2) {
        HostTensor late;
        const uint64_t before = s.device->counters().copies;
        auto st = s.session->output_to_host(0, late);
        ASSERT_TRUE(st) << st.error().message;
        EXPECT_EQ(s.device->counters().copies - before, 1u);
        expect_same_bytes(late, want[0], "the late host copy, run " + std::to_string(run));
        ASSERT_TRUE(s.session->output_to_host(0, late));  // made once: now the host's
        EXPECT_EQ(s.device->counters().copies - before, 1u);
        expect_same_bytes(late, want[0], "again");
      }
    }
    EXPECT_EQ(s.device->fake_counters().captures, graphs ? 1 : 0);
  }
}

// Where the input is read on the host first (the Conv on the CPU), or there is no device, there
// is nothing to bind: device_input says why, and a run that claims it is an error naming it.
TEST(DeviceInput, AnInputReadOnTheHostCannotBeBoundAndSaysWhy) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  const Shape shape{1, 4, 6, 6};
  DeviceSession s = make_session(model, false, true, {"Relu", "Add", "Sigmoid", "Transpose"});
  ASSERT_TRUE(s.session);
  auto at = s.session->device_input(0, {shape});
  ASSERT_TRUE(at) << at.error().message;
  EXPECT_EQ(at->data, nullptr);
  EXPECT_NE(at->why_not.find("input 'x' is read by Conv node"), std::string::npos) << at->why_not;
  EXPECT_NE(at->why_not.find("on cpu"), std::string::npos) << at->why_not;
  // Asked before any run, device_input leaves device_output as it was (no run yet).
  EXPECT_EQ(s.session->device_output(0).error().code, ErrorCode::kUsage);
  const HostTensor x = random_tensor(shape, 2400);
  TensorRef in = x.ref();
  std::vector<HostTensor> got;
  NativeSession::RunOptions opt;
  opt.inputs_on_device = 1;
  auto st = s.session->run(std::span<const TensorRef>(&in, 1), got, opt);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kUsage);
  EXPECT_NE(st.error().message.find("cannot be written on a device"), std::string::npos) << st.error().message;
  opt.inputs_on_device = 2;  // no input 1
  EXPECT_EQ(s.session->run(std::span<const TensorRef>(&in, 1), got, opt).error().code, ErrorCode::kUsage);
  // The CPU alone.
  auto cpu = NativeSession::create(model, SessionOptions{1});
  ASSERT_TRUE(cpu);
  auto none = (*cpu)->device_input(0, {shape});
  ASSERT_TRUE(none);
  EXPECT_EQ(none->data, nullptr);
  EXPECT_NE(none->why_not.find("input 'x' is read by Conv node"), std::string::npos) << none->why_not;
  EXPECT_EQ((*cpu)->device_input(1, {shape}).error().code, ErrorCode::kUsage);
}

// An input the plan needs as a value (a Reshape's shape) is read while planning: claiming it was
// written on the device is an error, before anything reads its (null) data.
TEST(DeviceInput, AnInputNeededWhilePlanningCannotBeClaimedOnTheDevice) {
  OnnxBuilder b;
  b.input("x", {2, 6});
  b.input("s", {2}, onnx::TensorProto::INT64);
  b.node("Reshape", {"x", "s"}, {"y"});
  b.output("y");
  const std::string bytes = b.bytes();
  LoadOptions lo;
  lo.optimize = false;
  auto model = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", lo);
  ASSERT_TRUE(model) << model.error().message;
  DeviceSession s = make_session(*model, false, true);
  ASSERT_TRUE(s.session);
  auto at = s.session->device_input(1, {Shape{2, 6}, Shape{2}});
  ASSERT_TRUE(at) << at.error().message;
  EXPECT_EQ(at->data, nullptr);
  EXPECT_NE(at->why_not.find("must be known when planning"), std::string::npos) << at->why_not;
  const HostTensor x = random_tensor(Shape{2, 6}, 2600);
  const TensorRef in[2] = {x.ref(), TensorRef{DType::kInt64, Shape{2}, nullptr}};
  std::vector<HostTensor> got;
  NativeSession::RunOptions opt;
  opt.inputs_on_device = 2;
  auto st = s.session->run(std::span<const TensorRef>(in, 2), got, opt);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kUsage);
  EXPECT_NE(st.error().message.find("input 's' must be known when planning"), std::string::npos) << st.error().message;
}

// Two outputs, each NHWC on the device and turned back to NCHW there before its copy: the second
// one's layout conversion runs after the first one's copy to the host, and must not reuse the
// bytes the first one's device_output points at.
TEST(DeviceOutput, EveryOutputOnTheDeviceSurvivesTheStepsAfterItsCopy) {
  OnnxBuilder b;
  b.input("x", {1, 4, 6, 6});
  b.random_initializer("w0", {8, 4, 3, 3}, -0.5f, 0.5f);
  b.random_initializer("w1", {8, 4, 3, 3}, -0.5f, 0.5f);
  auto* c0 = b.node("Conv", {"x", "w0"}, {"c0"});
  OnnxBuilder::attr_ints(c0, "pads", {1, 1, 1, 1});
  auto* c1 = b.node("Conv", {"x", "w1"}, {"c1"});
  OnnxBuilder::attr_ints(c1, "pads", {1, 1, 1, 1});
  b.node("Sigmoid", {"c0"}, {"y0"});
  b.node("Relu", {"c1"}, {"y1"});
  b.output("y0");
  b.output("y1");
  const std::string bytes = b.bytes();
  LoadOptions lo;
  lo.optimize = false;
  auto model = NativeModel::load_from_bytes(bytes.data(), bytes.size(), ".", lo);
  ASSERT_TRUE(model) << model.error().message;
  for (const bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "graphs" : "plain launches");
    DeviceSession s = make_session(*model, false, graphs);
    ASSERT_TRUE(s.session);
    for (uint32_t run = 0; run < 3; ++run) {
      const HostTensor x = random_tensor(Shape{1, 4, 6, 6}, 2500 + run);
      TensorRef in = x.ref();
      std::vector<HostTensor> got;
      ASSERT_TRUE(s.session->run(std::span<const TensorRef>(&in, 1), got));
      ASSERT_EQ(got.size(), 2u);
      for (size_t o = 0; o < 2; ++o) {
        auto dev = s.session->device_output(o);
        ASSERT_TRUE(dev) << dev.error().message;
        ASSERT_NE(dev->data, nullptr) << "output " << o;
        ASSERT_EQ(std::memcmp(dev->data, got[o].data(), got[o].bytes()), 0) << "output " << o << ", run " << run;
      }
    }
  }
}

}  // namespace
}  // namespace sd::native
