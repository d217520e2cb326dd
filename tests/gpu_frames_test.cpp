// The GPU frame kernels (letterbox from BGR and NV12, YOLOv8 decode, class-aware NMS) against
// their references on the vectors of gpu_frames_vectors.h, which gpu_frames_reference_test.cpp
// checks against the CPU path. Each test skips with the reason where there is no GPU (or no CUDA
// in the build); they run in streamdet_native_tests on the GPU machine (scripts/gpu-check.sh).
#include <gtest/gtest.h>

#include "gpu_frames_vectors.h"

#ifdef STREAMDET_HAVE_CUDA
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "engine/native/cuda/gpu_postprocess.h"
#include "engine/native/cuda/gpu_preprocess.h"
#include "postprocess/nms.h"
#endif

namespace sd {
namespace {

using namespace test::gpu_frames;

#ifndef STREAMDET_HAVE_CUDA
TEST(GpuFrames, NeedsTheCudaBuild) { GTEST_SKIP() << "built without the CUDA toolkit (STREAMDET_CUDA)"; }
#else
using namespace native::cuda;

// The reason to skip, or empty when a GPU can run the kernels.
std::string no_gpu() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no usable GPU: ") + cudaGetErrorString(e);
  if (n == 0) return "no GPU";
  return {};
}
#define SKIP_WITHOUT_GPU() \
  if (const std::string why = no_gpu(); !why.empty()) GTEST_SKIP() << why

std::string name(const FrameCase& f) {
  return std::to_string(f.src_w) + "x" + std::to_string(f.src_h) + " -> " + std::to_string(f.dst_w) + "x" +
         std::to_string(f.dst_h) + (f.spec.order == ChannelOrder::kRgb ? " rgb" : " bgr") +
         (f.spec.resize == ResizeMode::kStretch ? " stretch" : " letterbox");  // spec.str() is not in this binary
}

// Copies `rows` rows of `row_bytes` into device memory with a wider pitch (as a decoder's surface).
DeviceBuffer upload_pitched(const uint8_t* src, int64_t row_bytes, int rows, int64_t pitch) {
  DeviceBuffer b;
  EXPECT_TRUE(b.reserve(static_cast<size_t>(pitch * rows)));
  EXPECT_EQ(cudaMemcpy2D(b.get(), static_cast<size_t>(pitch), src, static_cast<size_t>(row_bytes),
                         static_cast<size_t>(row_bytes), static_cast<size_t>(rows), cudaMemcpyHostToDevice),
            cudaSuccess);
  return b;
}

// The input as NCHW floats, from either layout.
std::vector<float> download_input(const DeviceBuffer& d, const InputPlacement& p, InputLayout layout) {
  const size_t plane = static_cast<size_t>(p.dst_width) * p.dst_height;
  std::vector<float> out(3 * plane);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (layout == InputLayout::kNchwF32) {
    EXPECT_EQ(cudaMemcpy(out.data(), d.get(), out.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
  std::vector<__half> h(3 * plane);
  EXPECT_EQ(cudaMemcpy(h.data(), d.get(), h.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  if (layout == InputLayout::kNchwF16) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = __half2float(h[i]);
    return out;
  }
  for (size_t i = 0; i < plane; ++i)
    for (size_t c = 0; c < 3; ++c) out[c * plane + i] = __half2float(h[i * 3 + c]);
  return out;
}

const char* layout_name(InputLayout layout) {
  return layout == InputLayout::kNchwF32 ? " NCHW fp32" : layout == InputLayout::kNchwF16 ? " NCHW fp16" : " NHWC fp16";
}

// fp32: the reference's arithmetic (an FMA or a rounding at .5 apart: one level at most, almost
// never); fp16: plus half precision's rounding (2^-11 relative, values up to 255 / std).
float allowed(InputLayout layout, const InputPlacement& p, const std::vector<float>& ref) {
  if (layout == InputLayout::kNchwF32) return 1.001f;
  float biggest = 0, smallest_mul = 1e30f;
  for (float v : ref) biggest = std::max(biggest, std::abs(v));
  for (float m : p.mul) smallest_mul = std::min(smallest_mul, std::abs(m));
  return 1.001f + biggest / 1024.f / smallest_mul;
}

TEST(GpuFrames, LetterboxFromBgrMatchesTheReferenceInEveryLayout) {
  SKIP_WITHOUT_GPU();
  for (const FrameCase& f : bgr_cases()) {
    const std::vector<uint8_t> bytes = random_bytes(f.src_w, f.src_h, 3, static_cast<uint32_t>(f.src_w * 7919 + f.src_h));
    const int64_t pitch = 3 * static_cast<int64_t>(f.src_w) + 64;
    DeviceBuffer src = upload_pitched(bytes.data(), 3 * static_cast<int64_t>(f.src_w), f.src_h, pitch);
    const InputPlacement p = placement_for(f);
    const std::vector<float> ref = reference_letterbox_bgr(bytes.data(), f.src_w, f.src_h, p);
    for (InputLayout layout : {InputLayout::kNchwF32, InputLayout::kNhwcF16, InputLayout::kNchwF16}) {
      DeviceBuffer dst;
      ASSERT_TRUE(dst.reserve(ref.size() * 4));
      const auto s = letterbox_bgr_gpu({src.get<uint8_t>(), f.src_w, f.src_h, pitch}, p, layout, dst.get(), nullptr);
      ASSERT_TRUE(s) << s.error().message;
      EXPECT_LE(max_level_diff(download_input(dst, p, layout), ref, p), allowed(layout, p, ref))
          << name(f) << layout_name(layout);
    }
  }
}

TEST(GpuFrames, LetterboxFromNv12MatchesTheReferenceInEveryLayout) {
  SKIP_WITHOUT_GPU();
  for (const FrameCase& f : nv12_cases()) {
    const std::vector<uint8_t> nv12 = random_nv12(f.src_w, f.src_h, static_cast<uint32_t>(f.src_w * 31 + f.src_h));
    const int64_t pitch = f.src_w + 128;
    DeviceBuffer y = upload_pitched(nv12.data(), f.src_w, f.src_h, pitch);
    DeviceBuffer uv = upload_pitched(nv12.data() + static_cast<size_t>(f.src_w) * f.src_h, f.src_w, f.src_h / 2, pitch);
    const InputPlacement p = placement_for(f);
    const std::vector<float> ref = reference_letterbox_nv12(nv12.data(), f.src_w, f.src_h, p);
    for (InputLayout layout : {InputLayout::kNchwF32, InputLayout::kNhwcF16, InputLayout::kNchwF16}) {
      DeviceBuffer dst;
      ASSERT_TRUE(dst.reserve(ref.size() * 4));
      const Nv12Image img{y.get<uint8_t>(), uv.get<uint8_t>(), f.src_w, f.src_h, pitch, pitch};
      const auto s = letterbox_nv12_gpu(img, p, layout, dst.get(), nullptr);
      ASSERT_TRUE(s) << s.error().message;
      // One level of Y, U or V (a rounding at .5 apart) moves the output by up to 3.2 levels.
      EXPECT_LE(max_level_diff(download_input(dst, p, layout), ref, p), 3.2f * allowed(layout, p, ref))
          << name(f) << layout_name(layout);
    }
  }
}

// Checked before any CUDA call: runs without a GPU too.
TEST(GpuFrames, AContentThatDoesNotFitTheInputIsRefused) {
  InputPlacement p = placement_for(640, 480, 320, 320, {});
  p.x0 = 100;  // pushes the content past the right edge
  const auto s = letterbox_bgr_gpu({nullptr, 640, 480, 1920}, p, InputLayout::kNchwF32, nullptr, nullptr);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("does not fit"), std::string::npos) << s.error().message;
}

std::vector<GpuBox> to_gpu_boxes(const Detections& d) {
  std::vector<GpuBox> b;
  for (size_t i = 0; i < d.size(); ++i)
    b.push_back({d[i].x1, d[i].y1, d[i].x2, d[i].y2, d[i].score, d[i].class_id, static_cast<int>(i)});
  return b;
}

void expect_identical(const Detections& gpu, const Detections& cpu, const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_EQ(gpu[i].x1, cpu[i].x1) << what << " box " << i;
    EXPECT_EQ(gpu[i].y1, cpu[i].y1) << what << " box " << i;
    EXPECT_EQ(gpu[i].x2, cpu[i].x2) << what << " box " << i;
    EXPECT_EQ(gpu[i].y2, cpu[i].y2) << what << " box " << i;
    EXPECT_EQ(gpu[i].score, cpu[i].score) << what << " box " << i;
    EXPECT_EQ(gpu[i].class_id, cpu[i].class_id) << what << " box " << i;
  }
}

// Same kept boxes in the same order as Nms::run: random clustered sets with exact duplicates,
// IoU ties and score ties, class-aware and agnostic, with and without max_det, sizes around the
// 64-box tiles.
TEST(GpuFrames, NmsKeepsWhatTheCpuNmsKeeps) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(2026);
  GpuPostprocessScratch scratch;
  Nms nms;
  const int sizes[] = {1, 2, 63, 64, 65, 200, 1000, 5000};
  int trial = 0;
  for (int n : sizes)
    for (int variant = 0; variant < 4; ++variant, ++trial) {
      const Detections cand = random_boxes(rng, n, 1 + trial % 5, variant % 2 == 0, variant >= 2);
      const std::vector<GpuBox> boxes = to_gpu_boxes(cand);
      DeviceBuffer d;
      ASSERT_TRUE(d.reserve(boxes.size() * sizeof(GpuBox)));
      ASSERT_EQ(cudaMemcpy(d.get(), boxes.data(), boxes.size() * sizeof(GpuBox), cudaMemcpyHostToDevice), cudaSuccess);
      for (bool agnostic : {false, true})
        for (int max_det : {0, 10, 300}) {
          NmsOptions o;
          o.agnostic = agnostic;
          o.max_det = max_det;
          o.iou_threshold = trial % 3 == 0 ? 0.5f : 0.45f;
          Detections cpu = cand;
          nms.run(cpu, o);
          Detections gpu;
          const auto s = nms_gpu(d.get<GpuBox>(), n, {o.iou_threshold, agnostic, max_det}, scratch, nullptr, gpu);
          ASSERT_TRUE(s) << s.error().message;
          expect_identical(gpu, cpu,
                           "n " + std::to_string(n) + " variant " + std::to_string(variant) + (agnostic ? " agnostic" : "") +
                               " max_det " + std::to_string(max_det));
        }
    }
}

TEST(GpuFrames, YoloV8DecodeAndNmsKeepWhatTheCpuKeeps) {
  SKIP_WITHOUT_GPU();
  GpuPostprocessScratch scratch;
  Nms nms;
  for (bool transposed : {false, true}) {
    const SyntheticHead h = synthetic_yolov8_head(8400, 80, transposed, 11);
    DeviceBuffer d;
    ASSERT_TRUE(d.reserve(h.data.size() * 4));
    ASSERT_EQ(cudaMemcpy(d.get(), h.data.data(), h.data.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    for (float conf : {0.25f, 0.7f, 2.f}) {  // 2: nothing passes
      Detections cpu = reference_decode_yolov8(h, conf);
      NmsOptions o;
      nms.run(cpu, o);
      Detections gpu;
      const auto s = decode_nms_yolov8_gpu({d.get<float>(), h.anchors, h.nc, transposed}, conf,
                                           {o.iou_threshold, o.agnostic, o.max_det}, scratch, nullptr, gpu);
      ASSERT_TRUE(s) << s.error().message;
      expect_identical(gpu, cpu, std::string(transposed ? "transposed" : "channel-major") + " conf " + std::to_string(conf));
    }
  }
}

// YOLOv5 exactly; YOLOX's boxes go through CUDA's expf (2 ulp from glibc's): the same kept
// boxes, coordinates within 1e-3 px (an IoU within that of the threshold would flip a decision:
// none in these vectors).
TEST(GpuFrames, YoloV5AndYoloXDecodeAndNmsKeepWhatTheCpuKeeps) {
  SKIP_WITHOUT_GPU();
  GpuPostprocessScratch scratch;
  Nms nms;
  for (bool yolox : {false, true}) {
    const SyntheticRowsHead h = synthetic_rows_head(2100, 6, yolox ? std::vector<int>{8, 16, 32} : std::vector<int>{}, yolox ? 4 : 3);
    DeviceBuffer d;
    ASSERT_TRUE(d.reserve(h.data.size() * 4));
    ASSERT_EQ(cudaMemcpy(d.get(), h.data.data(), h.data.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ObjectnessHeadView view{d.get<float>(), h.anchors, h.nc};
    if (yolox) {
      view.num_strides = 3;
      for (int i = 0; i < 3; ++i) view.strides[i] = h.strides[static_cast<size_t>(i)];
      view.input_width = view.input_height = h.input;
    }
    for (float conf : {0.25f, 0.6f}) {
      Detections cpu = reference_decode_rows(h, conf);
      NmsOptions o;
      nms.run(cpu, o);
      Detections gpu;
      const auto s = decode_nms_objectness_gpu(view, conf, {o.iou_threshold, o.agnostic, o.max_det}, scratch, nullptr, gpu);
      ASSERT_TRUE(s) << s.error().message;
      const std::string what = std::string(yolox ? "yolox" : "yolov5") + " conf " + std::to_string(conf);
      if (!yolox) {
        expect_identical(gpu, cpu, what);
        continue;
      }
      ASSERT_EQ(gpu.size(), cpu.size()) << what;
      for (size_t i = 0; i < cpu.size(); ++i) {
        EXPECT_NEAR(gpu[i].x1, cpu[i].x1, 1e-3f) << what << " box " << i;
        EXPECT_NEAR(gpu[i].y2, cpu[i].y2, 1e-3f) << what << " box " << i;
        EXPECT_EQ(gpu[i].score, cpu[i].score) << what << " box " << i;
        EXPECT_EQ(gpu[i].class_id, cpu[i].class_id) << what << " box " << i;
      }
    }
  }
}
#endif

}  // namespace
}  // namespace sd
