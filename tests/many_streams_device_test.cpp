// Many streams on one device (issue 22, item 6), through the test device backend
// (fake_device_backend.h: asynchronous like a GPU, one queue per stream): what the pipeline does
// with the native engine on a GPU, one NativeSession per inference worker (NativeEngine's
// create_context) and micro-batches of frames from several sources in one run. Each worker's
// session must have its own device stream (one CUDA stream per worker), the workers running at
// once must each get their own answers, and a batch made of different streams' frames must give
// each frame the answer it gets alone. The GPU's twin: the check's "streams" rows
// (tools/gpu_check_streams.h), whose "stream_per_worker" counts the CUDA backend's streams.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "engine/native/backend.h"
#include "engine/native/session.h"
#include "device_chain_model.h"
#include "fake_device_backend.h"
#include "onnx_builder.h"

namespace sd::native {
namespace {

using test::FakeDeviceBackend;

// Batches of the images the tests deal out: [batch, 4, 12, 10].
HostTensor random_image(int64_t batch, uint32_t seed) { return test::random_tensor(Shape{batch, 4, 12, 10}, seed); }

std::unique_ptr<NativeSession> session_on(const std::shared_ptr<const NativeModel>& m, std::shared_ptr<const Backend> device) {
  SessionOptions so;
  so.threads = 1;
  if (device) so.backends = {std::move(device)};
  auto s = NativeSession::create(m, so);
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  return s ? std::move(*s) : nullptr;
}

std::vector<float> answer_alone(const std::shared_ptr<const NativeModel>& m, const HostTensor& image) {
  auto cpu = session_on(m, nullptr);
  TensorRef ref = image.ref();
  std::vector<HostTensor> out;
  EXPECT_TRUE(cpu->run(std::span<const TensorRef>(&ref, 1), out));
  return std::vector<float>(out[0].as<float>(), out[0].as<float>() + out[0].numel());
}

TEST(ManyStreamsOnOneDevice, EachWorkersSessionHasItsOwnStreamAndItsOwnAnswers) {
  const auto m = test::chain_model();
  ASSERT_TRUE(m);
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{"Conv", "Relu", "Add", "Sigmoid", "Transpose"});
  constexpr int kWorkers = 4, kRuns = 12;
  std::vector<std::unique_ptr<NativeSession>> sessions;
  for (int w = 0; w < kWorkers; ++w) sessions.push_back(session_on(m, device));
  std::vector<HostTensor> images;
  std::vector<std::vector<float>> want;
  for (int i = 0; i < kRuns; ++i) {
    images.push_back(random_image(1, 500u + static_cast<uint32_t>(i)));
    want.push_back(answer_alone(m, images.back()));
  }
  // A first run each (plans made), then the stream count stays: one per worker's session.
  for (auto& s : sessions) {
    TensorRef ref = images[0].ref();
    std::vector<HostTensor> out;
    ASSERT_TRUE(s->run(std::span<const TensorRef>(&ref, 1), out));
  }
  const uint64_t streams = device->counters().streams;
  EXPECT_EQ(streams, static_cast<uint64_t>(kWorkers));
  // The workers at once, each on its own thread, each frame its own answer.
  std::vector<std::string> errors(kWorkers);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w)
    threads.emplace_back([&, w] {
      std::vector<HostTensor> out;
      for (int i = w; i < kRuns * 3; i += kWorkers) {
        const size_t k = static_cast<size_t>(i % kRuns);
        TensorRef ref = images[k].ref();
        if (auto st = sessions[static_cast<size_t>(w)]->run(std::span<const TensorRef>(&ref, 1), out); !st) {
          errors[static_cast<size_t>(w)] = st.error().message;
          return;
        }
        for (size_t j = 0; j < want[k].size(); ++j)
          if (out[0].as<float>()[j] != want[k][j]) {
            errors[static_cast<size_t>(w)] = "frame " + std::to_string(k) + " differs at " + std::to_string(j);
            return;
          }
      }
    });
  for (auto& t : threads) t.join();
  for (int w = 0; w < kWorkers; ++w) EXPECT_EQ(errors[static_cast<size_t>(w)], "") << "worker " << w;
  EXPECT_EQ(device->counters().streams, streams) << "a stream was made per run";
}

TEST(ManyStreamsOnOneDevice, AMicroBatchOfSeveralStreamsFramesGivesEachFrameItsAnswerAlone) {
  const auto m = test::chain_model();
  ASSERT_TRUE(m);
  auto device = std::make_shared<FakeDeviceBackend>(std::set<std::string>{"Conv", "Relu", "Add", "Sigmoid", "Transpose"});
  auto session = session_on(m, device);
  // Three sources' frames in one batch, as the scheduler's pop_batch hands a worker.
  const std::vector<HostTensor> frames{random_image(1, 11), random_image(1, 22), random_image(1, 33)};
  HostTensor batch(DType::kFloat32, Shape{3, 4, 12, 10});
  for (size_t i = 0; i < frames.size(); ++i)
    std::memcpy(batch.as<float>() + static_cast<int64_t>(i) * frames[i].numel(), frames[i].data(), frames[i].bytes());
  TensorRef ref = batch.ref();
  std::vector<HostTensor> out;
  for (int run = 0; run < 3; ++run) {  // plain, then recorded, then replayed
    auto st = session->run(std::span<const TensorRef>(&ref, 1), out);
    ASSERT_TRUE(st) << st.error().message;
    ASSERT_EQ(out[0].shape()[0], 3);
    const int64_t slot = out[0].numel() / 3;
    for (size_t i = 0; i < frames.size(); ++i) {
      const std::vector<float> alone = answer_alone(m, frames[i]);
      ASSERT_EQ(static_cast<int64_t>(alone.size()), slot);
      for (int64_t j = 0; j < slot; ++j)
        ASSERT_NEAR(out[0].as<float>()[static_cast<int64_t>(i) * slot + j], alone[static_cast<size_t>(j)], 1e-6f)
            << "run " << run << ", stream " << i << " at " << j;
    }
  }
  EXPECT_EQ(device->counters().streams, 1u);
}

}  // namespace
}  // namespace sd::native
