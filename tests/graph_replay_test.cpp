// Recording a plan's device work once and replaying it (CUDA graphs, issue 22 item 3) and the
// page-locked staging of inputs and outputs, through the test device backend (fake_device_backend.h):
// asynchronous like a GPU (work runs when the stream is waited for), with staging, and recording
// with the addresses given at the time (a replay on memory that has since been freed fails). What
// the session must get right with any device: results equal the CPU's on every run, with a new
// input each time; one recording per plan; no allocation, stream or recording in steady state;
// no graph where a host step sits between the device's steps (and the plan says why); a recording
// that fails leaves plain launches, never a wrong answer; memory that moves means a new recording.
// The CUDA backend's own counts: cuda_backend_test.cpp (skips without a GPU).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "engine/native/backend.h"
#include "engine/native/half.h"
#include "engine/native/session.h"
#include "device_chain_model.h"
#include "fake_device_backend.h"
#include "onnx_builder.h"

namespace sd::native {
namespace {

using test::FakeDeviceBackend;

using test::chain_model;
using test::random_tensor;

const std::set<std::string> kAllOps{"Conv", "Relu", "Add", "Sigmoid", "Transpose"};

std::unique_ptr<NativeSession> session_on(const std::shared_ptr<const NativeModel>& model, std::shared_ptr<const Backend> device,
                                          bool graphs = true) {
  SessionOptions so;
  so.threads = 1;
  so.cuda_graphs = graphs;
  if (device) so.backends = {std::move(device)};
  auto s = NativeSession::create(model, so);
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  return s ? std::move(*s) : nullptr;
}

// Runs x through the session and through the CPU alone; the outputs must be equal (the test
// device runs the CPU's kernels).
void expect_run_as_cpu(NativeSession& s, const std::shared_ptr<const NativeModel>& model, const HostTensor& x) {
  auto cpu = session_on(model, nullptr);
  TensorRef ref = x.ref();
  std::vector<HostTensor> want, got;
  ASSERT_TRUE(cpu->run(std::span<const TensorRef>(&ref, 1), want));
  auto st = s.run(std::span<const TensorRef>(&ref, 1), got);
  ASSERT_TRUE(st) << st.error().message;
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(got[o].shape(), want[o].shape());
    for (int64_t i = 0; i < want[o].numel(); ++i) ASSERT_EQ(got[o].as<float>()[i], want[o].as<float>()[i]) << "output " << o << " at " << i;
  }
}

TEST(GraphReplay, DeviceStepsAreRecordedOnceAndReplayedWithNewInputsEveryRun) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  auto device = std::make_shared<FakeDeviceBackend>(kAllOps);
  auto s = session_on(model, device);
  const Shape shape{1, 4, 12, 10};
  auto summary = s->plan_summary({shape});
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_NE(summary->graph.find("recorded on test once, replayed every run"), std::string::npos) << summary->graph;
  EXPECT_EQ(summary->copies, 2);  // the input up, the output down
  // The first run launches one by one, the second records and replays, then replays alone.
  for (uint32_t run = 0; run < 2; ++run) expect_run_as_cpu(*s, model, random_tensor(shape, 100 + run));
  EXPECT_EQ(device->fake_counters().captures, 1);
  EXPECT_EQ(device->fake_counters().replays, 1);
  const native::BackendCounters before = device->counters();
  const int kernels = device->fake_counters().kernels;
  for (uint32_t run = 0; run < 5; ++run) expect_run_as_cpu(*s, model, random_tensor(shape, 200 + run));
  const native::BackendCounters after = device->counters();
  EXPECT_EQ(after.graph_captures, before.graph_captures);
  EXPECT_EQ(after.graph_launches - before.graph_launches, 5u);
  EXPECT_EQ(after.copies - before.copies, 5u * 2u);  // a replay's copies count as the run's
  // Nothing made per frame: no device or page-locked allocation, no free, no stream, no kernel.
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.frees, before.frees);
  EXPECT_EQ(after.host_allocations, before.host_allocations);
  EXPECT_EQ(after.streams, before.streams);
  EXPECT_EQ(device->fake_counters().kernels, kernels);
  // The input and the host side of the output are staged in page-locked memory (the test device
  // refuses a queued copy from or to any other host memory).
  EXPECT_GE(after.host_allocations, 2u);
}

TEST(GraphReplay, TurnedOffEveryKernelIsLaunchedAndTheResultsAreTheSame) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  auto device = std::make_shared<FakeDeviceBackend>(kAllOps);
  auto s = session_on(model, device, false);
  const Shape shape{1, 4, 9, 11};
  auto summary = s->plan_summary({shape});
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->graph, "off");
  for (uint32_t run = 0; run < 4; ++run) expect_run_as_cpu(*s, model, random_tensor(shape, 300 + run));
  EXPECT_EQ(device->fake_counters().captures, 0);
  EXPECT_EQ(device->fake_counters().replays, 0);
}

TEST(GraphReplay, AHostStepBetweenTheDevicesStepsMeansNoGraphAndThePlanSaysWhy) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  // Relu on the CPU between the device's Conv and Add: the host reads the Conv's output mid-run,
  // so each run waits for the device there (the test device runs nothing before it is waited for).
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{"Conv", "Add", "Sigmoid", "Transpose"});
  auto s = session_on(model, device);
  const Shape shape{1, 4, 8, 8};
  auto summary = s->plan_summary({shape});
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->graph.rfind("none: ", 0), 0u) << summary->graph;
  EXPECT_NE(summary->graph.find("Relu node"), std::string::npos) << summary->graph;
  EXPECT_NE(summary->graph.find("runs on cpu between the device's steps"), std::string::npos) << summary->graph;
  for (uint32_t run = 0; run < 4; ++run) expect_run_as_cpu(*s, model, random_tensor(shape, 400 + run));
  EXPECT_EQ(device->fake_counters().captures, 0);
  EXPECT_GE(device->fake_counters().waits, 4);  // at least once per run, before the Relu
}

TEST(GraphReplay, ARecordingThatFailsFallsBackToPlainLaunchesWithTheSameResults) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  auto device = std::make_shared<FakeDeviceBackend>(kAllOps);
  device->refuse_capture(true);  // as a kernel that synchronizes would
  auto s = session_on(model, device);
  const Shape shape{1, 4, 7, 9};
  for (uint32_t run = 0; run < 4; ++run) expect_run_as_cpu(*s, model, random_tensor(shape, 500 + run));
  EXPECT_EQ(device->fake_counters().captures, 0);
  EXPECT_EQ(device->fake_counters().replays, 0);
  auto summary = s->plan_summary({shape});
  ASSERT_TRUE(summary);
  EXPECT_NE(summary->graph.find("recording failed"), std::string::npos) << summary->graph;
  EXPECT_NE(summary->graph.find("not allowed while recording"), std::string::npos) << summary->graph;
  EXPECT_NE(summary->graph.find("plain launches"), std::string::npos) << summary->graph;
}

TEST(GraphReplay, EachInputShapeHasItsRecordingAndMemoryThatMovedIsRecordedAgain) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  auto device = std::make_shared<FakeDeviceBackend>(kAllOps);
  auto s = session_on(model, device);
  const Shape small{1, 4, 6, 6}, large{2, 4, 20, 18};
  for (uint32_t run = 0; run < 3; ++run) expect_run_as_cpu(*s, model, random_tensor(small, 600 + run));
  EXPECT_EQ(device->fake_counters().captures, 1);
  // The larger plan grows the arenas: the small plan's recording points at freed memory now.
  for (uint32_t run = 0; run < 3; ++run) expect_run_as_cpu(*s, model, random_tensor(large, 700 + run));
  EXPECT_EQ(device->fake_counters().captures, 2);
  for (uint32_t run = 0; run < 3; ++run) expect_run_as_cpu(*s, model, random_tensor(small, 800 + run));
  EXPECT_EQ(device->fake_counters().captures, 3);  // the small plan recorded again, once
  // Both recordings are current now: alternating shapes replays without recording.
  for (uint32_t run = 0; run < 4; ++run) expect_run_as_cpu(*s, model, random_tensor(run % 2 ? small : large, 900 + run));
  EXPECT_EQ(device->fake_counters().captures, 3);
  EXPECT_EQ(s->memory_stats().plans, 2u);
}

TEST(GraphReplay, WithoutPageLockedStagingThereIsNoGraphAndTheResultsAreTheSame) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  auto device = std::make_shared<FakeDeviceBackend>(kAllOps);
  device->set_host_staging(false);
  auto s = session_on(model, device);
  const Shape shape{1, 4, 5, 5};
  auto summary = s->plan_summary({shape});
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->graph, "none: no page-locked staging for the inputs");
  for (uint32_t run = 0; run < 3; ++run) expect_run_as_cpu(*s, model, random_tensor(shape, 1000 + run));
  EXPECT_EQ(device->fake_counters().captures, 0);
  EXPECT_EQ(device->fake_counters().host_allocations, 0);
}

// A caller (a preprocess) writes the input straight into the session's page-locked staging and
// hands that over: the run uploads it from there, whatever was written since the last run.
TEST(GraphReplay, AnInputWrittenIntoTheStagingIsUploadedFromThere) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  auto device = std::make_shared<FakeDeviceBackend>(kAllOps);
  auto s = session_on(model, device);
  const Shape shape{1, 4, 8, 6};
  const size_t bytes = static_cast<size_t>(shape.numel()) * sizeof(float);
  auto staging = s->input_staging(0, bytes);
  ASSERT_TRUE(staging) << staging.error().message;
  ASSERT_NE(*staging, nullptr);
  EXPECT_TRUE(device->owns_host(*staging, bytes));
  auto cpu = session_on(model, nullptr);
  for (uint32_t run = 0; run < 4; ++run) {
    const HostTensor x = random_tensor(shape, 1200 + run);
    std::memcpy(*staging, x.data(), bytes);
    TensorRef in{DType::kFloat32, shape, *staging};
    TensorRef ref = x.ref();
    std::vector<HostTensor> want, got;
    ASSERT_TRUE(cpu->run(std::span<const TensorRef>(&ref, 1), want));
    ASSERT_TRUE(s->run(std::span<const TensorRef>(&in, 1), got));
    for (int64_t i = 0; i < want[0].numel(); ++i) ASSERT_EQ(got[0].as<float>()[i], want[0].as<float>()[i]) << "run " << run << " at " << i;
  }
  EXPECT_EQ(device->fake_counters().captures, 1);
  EXPECT_EQ(s->input_staging(1, bytes).error().code, ErrorCode::kUsage);
  // The CPU alone stages nothing.
  auto none = cpu->input_staging(0, bytes);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, nullptr);
}

// A postprocess on the device reads an output where the device computed it (device_output):
// after every run, plain or replayed, its bytes there are the host copy's, in the device's memory.
TEST(DeviceOutput, AfterEveryRunTheDevicesOutputEqualsTheHostCopy) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  for (const bool graphs : {true, false}) {
    SCOPED_TRACE(graphs ? "graphs" : "plain launches");
    auto device = std::make_shared<FakeDeviceBackend>(kAllOps);
    auto s = session_on(model, device, graphs);
    EXPECT_EQ(s->device_output(0).error().code, ErrorCode::kUsage) << "before any run";
    for (uint32_t run = 0; run < 4; ++run) {
      const HostTensor x = random_tensor(Shape{2, 4, 7, 5}, 1300 + run);
      TensorRef in = x.ref();
      std::vector<HostTensor> got;
      ASSERT_TRUE(s->run(std::span<const TensorRef>(&in, 1), got));
      auto out = s->device_output(0);
      ASSERT_TRUE(out) << out.error().message;
      ASSERT_NE(out->data, nullptr);
      EXPECT_EQ(out->dtype, DType::kFloat32);
      EXPECT_EQ(out->shape, got[0].shape());
      EXPECT_EQ(out->backend, "test");
      EXPECT_TRUE(device->owns(out->data, got[0].bytes())) << "not in the device's memory";
      ASSERT_EQ(std::memcmp(out->data, got[0].data(), got[0].bytes()), 0) << "run " << run;
    }
    EXPECT_EQ(device->fake_counters().captures, graphs ? 1 : 0);
    EXPECT_EQ(s->device_output(1).error().code, ErrorCode::kUsage);
  }
}

// Stored fp16 on the device (--precision fp16): the device's output is fp16, the host copy its
// exact widening.
TEST(DeviceOutput, AnFp16PlanHandsOutTheFp16TensorTheHostCopyWidens) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  auto device = std::make_shared<FakeDeviceBackend>(kAllOps, Layout::kNhwc, DType::kFloat16);
  SessionOptions so;
  so.backends = {device};
  so.device_fp16 = true;
  auto s = NativeSession::create(model, so);
  ASSERT_TRUE(s);
  const HostTensor x = random_tensor(Shape{1, 4, 6, 6}, 1400);
  TensorRef in = x.ref();
  std::vector<HostTensor> got;
  ASSERT_TRUE((*s)->run(std::span<const TensorRef>(&in, 1), got));
  auto out = (*s)->device_output(0);
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_NE(out->data, nullptr);
  ASSERT_EQ(out->dtype, DType::kFloat16);
  const auto* h = static_cast<const uint16_t*>(out->data);
  for (int64_t i = 0; i < got[0].numel(); ++i) ASSERT_EQ(half_to_float(h[i]), got[0].as<float>()[i]) << i;
}

// Computed on the host (no device, or the last node on the CPU): no device output.
TEST(DeviceOutput, AnOutputComputedOnTheHostHasNone) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  const HostTensor x = random_tensor(Shape{1, 4, 6, 6}, 1500);
  TensorRef in = x.ref();
  for (auto device : {std::shared_ptr<FakeDeviceBackend>{}, std::make_shared<FakeDeviceBackend>(std::set<std::string>{"Conv", "Relu", "Add"})}) {
    auto s = session_on(model, device);
    std::vector<HostTensor> got;
    ASSERT_TRUE(s->run(std::span<const TensorRef>(&in, 1), got));
    auto out = s->device_output(0);
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_EQ(out->data, nullptr) << (device ? "Sigmoid on the CPU" : "the CPU alone");
  }
}

TEST(GraphReplay, TheEngineProfileTimesStepsOneByOne) {
  auto model = chain_model();
  ASSERT_TRUE(model);
  auto device = std::make_shared<FakeDeviceBackend>(kAllOps);
  SessionOptions so;
  so.profile_rows = 0;
  so.backends = {device};
  auto s = NativeSession::create(model, so);
  ASSERT_TRUE(s);
  const Shape shape{1, 4, 6, 5};
  auto summary = (*s)->plan_summary({shape});
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->graph, "off: the engine profile times each step");
  testing::internal::CaptureStderr();  // the profile printed when the session ends
  for (uint32_t run = 0; run < 3; ++run) expect_run_as_cpu(**s, model, random_tensor(shape, 1100 + run));
  s->reset();
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(device->fake_counters().captures, 0);
}

}  // namespace
}  // namespace sd::native
