// The native engine's decode + NMS on the device output (engine/native/cuda/gpu_detect_output.h):
// on a GPU, the bundled YOLOv8 model run on the conformance scene, the kept boxes decoded where the
// run left the head (float32, and fp16 widened on the device) against the plain CPU decode + NMS of
// the host copy of the same run: the same objects (classes equal, corners within 1 px). In
// streamdet_native_tests, so the GPU check runs it. Without a GPU: what a decode says.
#include <gtest/gtest.h>

#include "conformance/synthetic_scene.h"
#include "engine/native/cuda/cuda_backend.h"
#include "engine/native/cuda/gpu_detect_output.h"
#include "engine/native/session.h"
#include "postprocess/detection_parity.h"

namespace sd::native {
namespace {

TEST(GpuDetectOutput, WithoutAGpuADecodeSaysWhyInOneLine) {
  if (cuda_backend(0)) GTEST_SKIP() << "a GPU is usable here";
  auto m = NativeModel::load(std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8.onnx");
  ASSERT_TRUE(m) << m.error().message;
  auto session = NativeSession::create(*m, SessionOptions{1});
  ASSERT_TRUE(session);
  auto detect = make_cuda_detect_output(**session, 0, "cuda:0");
#ifndef STREAMDET_HAVE_CUDA
  EXPECT_TRUE(detect == nullptr);
#else
  ASSERT_NE(detect, nullptr);
  HostTensor x(DType::kFloat32, Shape{1, 3, 256, 256});
  conformance::fill_scene(x);
  TensorRef ref = x.ref();
  std::vector<HostTensor> out;
  ASSERT_TRUE((*session)->run(std::span<const TensorRef>(&ref, 1), out));
  GpuDetectHead head;
  head.num_classes = static_cast<int>(out[0].shape()[1]) - 4;
  Detections got;
  Status st = detect->detect(head, GpuDetectParams{}, 0, got);
  ASSERT_FALSE(st) << "the CPU session leaves nothing on a device";
  EXPECT_EQ(st.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(st.error().message.find('\n'), std::string::npos) << st.error().message;
#endif
}

void expect_same_detections(const std::string& model, int batch, bool fp16) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  auto m = NativeModel::load(std::string(STREAMDET_SOURCE_DIR) + "/models/" + model);
  ASSERT_TRUE(m) << m.error().message;
  SessionOptions so{2};
  so.backends = {*cuda};
  so.device_fp16 = fp16;
  auto session = NativeSession::create(*m, so);
  ASSERT_TRUE(session) << session.error().message;
  auto detect = make_cuda_detect_output(**session, 0, (*cuda)->name());
  ASSERT_NE(detect, nullptr);
  HostTensor one(DType::kFloat32, Shape{1, 3, 256, 256});
  conformance::fill_scene(one);
  HostTensor x(DType::kFloat32, Shape{batch, 3, 256, 256});
  for (int b = 0; b < batch; ++b) std::copy_n(one.as<float>(), one.numel(), x.as<float>() + b * one.numel());
  int matched = 0;
  for (int run = 0; run < 3; ++run) {  // the second run on replays its CUDA graph
    TensorRef ref = x.ref();
    std::vector<HostTensor> out;
    ASSERT_TRUE((*session)->run(std::span<const TensorRef>(&ref, 1), out));
    const int64_t channels = out[0].shape()[1], anchors = out[0].shape()[2];
    GpuDetectHead head;
    head.num_classes = static_cast<int>(channels) - 4;
    const GpuDetectParams params{0.25f, 0.45f, false, 300};
    for (int b = 0; b < batch; ++b) {
      const Detections want = decode_yolov8_plain(out[0].as<float>() + b * channels * anchors, channels, anchors, 0.25f, 0.45f);
      Detections got;
      Status st = detect->detect(head, params, b, got);
      ASSERT_TRUE(st) << st.error().message;
      const DetectionParity parity = compare_detections(want, got, 0.25f, 0.001f, 1.0f);
      EXPECT_TRUE(parity.same()) << "run " << run << " image " << b << ": missing " << parity.missing << ", extra " << parity.extra;
      EXPECT_LE(parity.max_corner_px, 1.0);
      matched += parity.matched;
    }
  }
  EXPECT_GT(matched, 3) << "the scene's objects are found";
}

TEST(GpuDetectOutput, Float32HeadDecodedOnTheDeviceFindsWhatTheHostCopyFinds) { expect_same_detections("tiny_synth_v8.onnx", 1, false); }
TEST(GpuDetectOutput, Fp16HeadWidenedOnTheDeviceFindsWhatTheHostCopyFinds) { expect_same_detections("tiny_synth_v8.onnx", 1, true); }
TEST(GpuDetectOutput, ABatchDecodedOnTheDeviceFindsWhatTheHostCopyFinds) { expect_same_detections("tiny_synth_v8_dynamic.onnx", 2, true); }

}  // namespace
}  // namespace sd::native
