// The native engine's GpuFrameInput on CUDA (engine/native/cuda/gpu_frame_staging.h), with no
// OpenCV so that the GPU check's streamdet_native_tests runs it: the bundled tiny model on a
// synthetic scene it finds objects in, the input letterboxed by the plain C++ reference on the
// host (gpu_frames_vectors.h, itself checked against preprocess_frame) and by the GPU into the
// session's staging; the same detections. Without a GPU: what a put says.
#include <gtest/gtest.h>

#include <cmath>

#ifdef STREAMDET_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "conformance/synthetic_scene.h"
#include "engine/native/cuda/cuda_backend.h"
#include "engine/native/cuda/gpu_frame_staging.h"
#include "engine/native/half.h"
#include "engine/native/session.h"
#include "gpu_frames_vectors.h"
#include "postprocess/detection_parity.h"

namespace sd::native {
namespace {

using test::gpu_frames::placement_for;

// The conformance scene at the frame's size as packed BGR bytes.
std::vector<uint8_t> scene_bgr(int w, int h) {
  HostTensor x(DType::kFloat32, Shape{1, 3, h, w});
  conformance::fill_scene(x);
  std::vector<uint8_t> bgr(static_cast<size_t>(w) * h * 3);
  const size_t plane = static_cast<size_t>(w) * h;
  for (size_t i = 0; i < plane; ++i)
    for (int c = 0; c < 3; ++c)  // RGB planes to B, G, R bytes
      bgr[i * 3 + static_cast<size_t>(c)] =
          static_cast<uint8_t>(std::lround(std::clamp(x.as<float>()[static_cast<size_t>(2 - c) * plane + i], 0.f, 1.f) * 255.f));
  return bgr;
}

Detections detect(const HostTensor& out, int image, float conf) {
  const int64_t channels = out.shape()[1], anchors = out.shape()[2];
  return decode_yolov8_plain(out.as<float>() + image * channels * anchors, channels, anchors, conf, 0.45f);
}

TEST(GpuFrameStaging, WithoutAGpuAPutSaysWhyInOneLine) {
  if (cuda_backend(0)) GTEST_SKIP() << "a GPU is usable here";
  auto m = NativeModel::load(std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8.onnx");
  ASSERT_TRUE(m) << m.error().message;
  auto session = NativeSession::create(*m, SessionOptions{1});
  ASSERT_TRUE(session);
  auto frames = make_cuda_frame_input(**session, 0, "cuda:0");
#ifndef STREAMDET_HAVE_CUDA
  EXPECT_TRUE(frames == nullptr);
#else
  ASSERT_NE(frames, nullptr);
  const std::vector<uint8_t> bgr = scene_bgr(64, 48);
  const auto p = placement_for(64, 48, 64, 64, PreprocessSpec{});
  Status st = frames->put_bgr(0, 1, bgr.data(), 64, 48, 64 * 3, p);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message.find('\n'), std::string::npos) << st.error().message;
  std::vector<Tensor> out;
  EXPECT_FALSE(frames->infer_put(out));  // nothing was put
  DeviceNv12 elsewhere;
  elsewhere.device = 1, elsewhere.width = 64, elsewhere.height = 48;
  Status other = frames->put_nv12_device(0, 1, elsewhere, p);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("cuda:1"), std::string::npos) << other.error().message;
#endif
}

#ifdef STREAMDET_HAVE_CUDA
// An NVDEC frame kept on the GPU (pitched NV12 in device memory, as the decoder's pool holds it)
// put as it is, against the same pixels downloaded as I420 and put from the host: the same network
// input, so the same outputs, bit for bit (one kernel, the same pixels).
TEST(GpuFrameStaging, ADeviceNv12FrameGivesWhatItsHostCopyGives) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  auto m = NativeModel::load(std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8.onnx");
  ASSERT_TRUE(m) << m.error().message;
  SessionOptions so{2};
  so.backends = {*cuda};
  so.device_fp16 = true;
  auto session = NativeSession::create(*m, so);
  ASSERT_TRUE(session) << session.error().message;
  auto frames = make_cuda_frame_input(**session, 0, (*cuda)->name());
  ASSERT_NE(frames, nullptr);
  const int w = 320, h = 192;
  const int64_t pitch = w + 128;
  const std::vector<uint8_t> nv12 = test::gpu_frames::random_nv12(w, h, 1234);
  std::vector<uint8_t> i420(nv12.begin(), nv12.begin() + w * h);
  const size_t c = static_cast<size_t>(w) * h / 4;
  for (size_t i = 0; i < c; ++i) i420.push_back(nv12[static_cast<size_t>(w) * h + 2 * i]);
  for (size_t i = 0; i < c; ++i) i420.push_back(nv12[static_cast<size_t>(w) * h + 2 * i + 1]);
  void* dev = nullptr;
  size_t dev_pitch = 0;
  ASSERT_EQ(cudaMallocPitch(&dev, &dev_pitch, pitch, static_cast<size_t>(h) * 3 / 2), cudaSuccess);
  ASSERT_EQ(cudaMemcpy2D(dev, dev_pitch, nv12.data(), w, w, static_cast<size_t>(h) * 3 / 2, cudaMemcpyHostToDevice), cudaSuccess);
  const auto* base = static_cast<const uint8_t*>(dev);
  const DeviceNv12 frame{base, base + dev_pitch * h, static_cast<int64_t>(dev_pitch), w, h, 0};
  const auto p = placement_for(w, h, 256, 256, PreprocessSpec{});
  std::vector<Tensor> from_device, from_host;
  Status st = frames->put_nv12_device(0, 1, frame, p);
  ASSERT_TRUE(st) << st.error().message;
  ASSERT_TRUE(frames->infer_put(from_device));
  st = frames->put_i420(0, 1, i420.data(), w, h, p);
  ASSERT_TRUE(st) << st.error().message;
  ASSERT_TRUE(frames->infer_put(from_host));
  cudaFree(dev);
  ASSERT_EQ(from_device.size(), from_host.size());
  for (size_t i = 0; i < from_device.size(); ++i) {
    ASSERT_EQ(from_device[i].numel(), from_host[i].numel());
    for (int64_t k = 0; k < from_device[i].numel(); ++k) ASSERT_EQ(from_device[i].data()[k], from_host[i].data()[k]) << "output " << i << " value " << k;
  }
}
#endif

// One context, two ways in: the reference letterbox on the host into run(), and the frame put on
// the GPU (written straight into the plan's device input: fp16 NCHW with fp16, fp32 without);
// the same objects (classes equal, corners within 1 px). Batch 2 on the dynamic model.
void expect_same_detections(const std::string& model, int batch, bool fp16 = true) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  auto m = NativeModel::load(std::string(STREAMDET_SOURCE_DIR) + "/models/" + model);
  ASSERT_TRUE(m) << m.error().message;
  SessionOptions so{2};
  so.backends = {*cuda};
  so.device_fp16 = fp16;  // fp16: as `run` on a GPU
  auto session = NativeSession::create(*m, so);
  ASSERT_TRUE(session) << session.error().message;
  auto frames = make_cuda_frame_input(**session, 0, (*cuda)->name());
  ASSERT_NE(frames, nullptr);
  const int sizes[][2] = {{320, 192}, {256, 256}, {200, 310}};
  const PreprocessSpec spec;  // the tiny model's: rgb, letterbox, pad 114, 1/255
  int matched = 0;
  for (const auto& sz : sizes) {
    const int w = sz[0], h = sz[1];
    const std::vector<uint8_t> bgr = scene_bgr(w, h);
    const auto p = placement_for(w, h, 256, 256, spec);
    HostTensor x(DType::kFloat32, Shape{batch, 3, 256, 256});
    const std::vector<float> one = test::gpu_frames::reference_letterbox_bgr(bgr.data(), w, h, p);
    for (int b = 0; b < batch; ++b) std::copy(one.begin(), one.end(), x.as<float>() + b * static_cast<int64_t>(one.size()));
    TensorRef ref = x.ref();
    std::vector<HostTensor> host_out;
    ASSERT_TRUE((*session)->run(std::span<const TensorRef>(&ref, 1), host_out));
    const HostTensor want_out = std::move(host_out[0]);
    for (int b = 0; b < batch; ++b) {
      Status st = frames->put_bgr(b, batch, bgr.data(), w, h, static_cast<int64_t>(w) * 3, p);
      ASSERT_TRUE(st) << st.error().message;
    }
    std::vector<Tensor> gpu_out;
    Status st = frames->infer_put(gpu_out);
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_NE(frames->where().find("into the device input"), std::string::npos) << frames->where();
    for (int b = 0; b < batch; ++b) {
      const Detections want = detect(want_out, b, 0.25f);
      const int64_t per = gpu_out[0].numel() / batch;
      const Detections got = decode_yolov8_plain(gpu_out[0].data() + b * per, gpu_out[0].shape()[1], gpu_out[0].shape()[2], 0.25f, 0.45f);
      const DetectionParity parity = compare_detections(want, got, 0.25f, 0.02f, 1.0f);
      EXPECT_TRUE(parity.same()) << w << "x" << h << " image " << b << ": missing " << parity.missing << ", extra " << parity.extra;
      EXPECT_LE(parity.max_corner_px, 1.0) << w << "x" << h;
      matched += parity.matched;
    }
  }
  EXPECT_GT(matched, 3) << "the scene's objects are found";
}

#ifdef STREAMDET_HAVE_CUDA
// What the kernel wrote where the plan reads its input, before the run: the reference letterbox
// in the plan's dtype (fp16 NCHW with --precision fp16, fp32 NCHW without), batch 2.
TEST(GpuFrameStaging, TheDeviceInputHoldsTheReferenceLetterboxInThePlansDtype) {
  auto cuda = cuda_backend(0);
  if (!cuda) GTEST_SKIP() << cuda.error().message;
  auto m = NativeModel::load(std::string(STREAMDET_SOURCE_DIR) + "/models/tiny_synth_v8_dynamic.onnx");
  ASSERT_TRUE(m) << m.error().message;
  for (const bool fp16 : {true, false}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    SessionOptions so{2};
    so.backends = {*cuda};
    so.device_fp16 = fp16;
    auto session = NativeSession::create(*m, so);
    ASSERT_TRUE(session) << session.error().message;
    auto frames = make_cuda_frame_input(**session, 0, (*cuda)->name());
    ASSERT_NE(frames, nullptr);
    const int w = 300, h = 200;
    const std::vector<uint8_t> bgr = scene_bgr(w, h);
    const auto p = placement_for(w, h, 256, 256, PreprocessSpec{});
    const std::vector<float> ref = test::gpu_frames::reference_letterbox_bgr(bgr.data(), w, h, p);
    for (int b = 0; b < 2; ++b) ASSERT_TRUE(frames->put_bgr(b, 2, bgr.data(), w, h, static_cast<int64_t>(w) * 3, p));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto at = (*session)->device_input(0, {Shape{2, 3, 256, 256}});
    ASSERT_TRUE(at) << at.error().message;
    ASSERT_NE(at->data, nullptr) << at->why_not;
    ASSERT_EQ(at->dtype, fp16 ? DType::kFloat16 : DType::kFloat32);
    const size_t n = ref.size() * 2;
    std::vector<float> got(n);
    if (fp16) {
      std::vector<uint16_t> half(n);
      ASSERT_EQ(cudaMemcpy(half.data(), at->data, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
      halves_to_floats(half.data(), got.data(), n);
    } else {
      ASSERT_EQ(cudaMemcpy(got.data(), at->data, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    for (int b = 0; b < 2; ++b) {
      const std::vector<float> image(got.begin() + static_cast<int64_t>(b * ref.size()), got.begin() + static_cast<int64_t>((b + 1) * ref.size()));
      // One uint8 level (resize arithmetic), plus fp16's rounding of values up to 1 (1/255 per level).
      EXPECT_LE(test::gpu_frames::max_level_diff(image, ref, p), fp16 ? 1.001f + 255.f / 2048.f : 1.001f) << "image " << b;
    }
    std::vector<Tensor> out;
    ASSERT_TRUE(frames->infer_put(out));
  }
}
#endif

TEST(GpuFrameStaging, FramesPutOnTheGpuFindWhatTheHostLetterboxFinds) { expect_same_detections("tiny_synth_v8.onnx", 1); }
TEST(GpuFrameStaging, ABatchPutOnTheGpuFindsWhatTheHostLetterboxFinds) { expect_same_detections("tiny_synth_v8_dynamic.onnx", 2); }
TEST(GpuFrameStaging, Fp32FramesPutOnTheGpuFindWhatTheHostLetterboxFinds) { expect_same_detections("tiny_synth_v8_dynamic.onnx", 2, false); }

}  // namespace
}  // namespace sd::native
