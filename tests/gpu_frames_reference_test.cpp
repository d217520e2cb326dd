// The GPU frame kernels' references and vectors (gpu_frames_vectors.h) against the CPU path on
// the same vectors, so that the GPU tests (gpu_frames_test.cpp) compare with what the CPU does.
// No GPU needed: these run everywhere.
#include <gtest/gtest.h>

#include <opencv2/core/mat.hpp>

#include "gpu_frames_vectors.h"
#include "postprocess/yolov5_decoder.h"
#include "postprocess/yolov8_decoder.h"
#include "postprocess/yolox_decoder.h"
#include "preprocess/letterbox.h"

namespace sd {
namespace {

using namespace test::gpu_frames;

std::string name(const FrameCase& f) {
  return std::to_string(f.src_w) + "x" + std::to_string(f.src_h) + " -> " + std::to_string(f.dst_w) + "x" +
         std::to_string(f.dst_h) + " " + f.spec.str();
}

TEST(GpuFramesReference, PlacementIsTheCpuLetterboxTransform) {
  auto cases = bgr_cases();
  for (const FrameCase& f : nv12_cases()) cases.push_back(f);
  for (const FrameCase& f : cases) {
    const InputPlacement p = placement_for(f);
    const auto t = LetterboxTransform::compute({f.src_w, f.src_h}, {f.dst_w, f.dst_h}, f.spec.resize, f.spec.pad);
    EXPECT_EQ(p.x0, static_cast<int>(t.pad_x)) << name(f);
    EXPECT_EQ(p.y0, static_cast<int>(t.pad_y)) << name(f);
    EXPECT_EQ(p.content_width, std::lround(t.scale_x * static_cast<float>(f.src_w))) << name(f);
    EXPECT_EQ(p.content_height, std::lround(t.scale_y * static_cast<float>(f.src_h))) << name(f);
    EXPECT_LE(p.x0 + p.content_width, f.dst_w) << name(f);
    EXPECT_LE(p.y0 + p.content_height, f.dst_h) << name(f);
  }
}

// The reference interpolates in float where cv::resize uses 11-bit fixed-point weights: at most
// one uint8 level apart, the border and unscaled frames exactly equal.
TEST(GpuFramesReference, BgrLetterboxIsTheCpuPathWithinOneLevel) {
  for (const FrameCase& f : bgr_cases()) {
    std::vector<uint8_t> bytes = random_bytes(f.src_w, f.src_h, 3, static_cast<uint32_t>(f.src_w * 7919 + f.src_h));
    const cv::Mat frame(f.src_h, f.src_w, CV_8UC3, bytes.data());
    std::vector<float> cpu(static_cast<size_t>(3 * f.dst_w * f.dst_h));
    PreprocessScratch scratch;
    preprocess_frame(frame, {f.dst_w, f.dst_h}, f.spec, cpu.data(), scratch);
    const InputPlacement p = placement_for(f);
    const std::vector<float> ref = reference_letterbox_bgr(bytes.data(), f.src_w, f.src_h, p);
    const bool unscaled = p.content_width == f.src_w && p.content_height == f.src_h;
    EXPECT_LE(max_level_diff(cpu, ref, p), unscaled ? 1e-3f : 1.001f) << name(f);
  }
}

// I420 for preprocess_i420 from the NV12 bytes (the chroma de-interleaved).
std::vector<uint8_t> nv12_to_i420(const std::vector<uint8_t>& nv12, int w, int h) {
  const size_t ys = static_cast<size_t>(w) * h, cs = ys / 4;
  std::vector<uint8_t> out(ys + 2 * cs);
  std::copy_n(nv12.begin(), ys, out.begin());
  for (size_t i = 0; i < cs; ++i) out[ys + i] = nv12[ys + 2 * i], out[ys + cs + i] = nv12[ys + 2 * i + 1];
  return out;
}

// One level in Y, U or V (cv::resize's rounding against the reference's) moves R, G or B by at
// most 1.164 + 2.018 levels; unscaled frames (no resize) agree to float rounding.
TEST(GpuFramesReference, Nv12LetterboxIsTheCpuI420PathWithinRoundingOfTheResize) {
  for (const FrameCase& f : nv12_cases()) {
    const std::vector<uint8_t> nv12 = random_nv12(f.src_w, f.src_h, static_cast<uint32_t>(f.src_w * 31 + f.src_h));
    std::vector<uint8_t> i420 = nv12_to_i420(nv12, f.src_w, f.src_h);
    const cv::Mat frame(f.src_h * 3 / 2, f.src_w, CV_8UC1, i420.data());
    std::vector<float> cpu(static_cast<size_t>(3 * f.dst_w * f.dst_h));
    PreprocessScratch scratch;
    preprocess_i420(frame, {f.dst_w, f.dst_h}, f.spec, cpu.data(), scratch);
    const InputPlacement p = placement_for(f);
    const std::vector<float> ref = reference_letterbox_nv12(nv12.data(), f.src_w, f.src_h, p);
    const bool unscaled = p.content_width == f.src_w && p.content_height == f.src_h;
    EXPECT_LE(max_level_diff(cpu, ref, p), unscaled ? 1e-3f : 3.2f) << name(f);
  }
}

TEST(GpuFramesReference, DecodeIsTheYoloV8Decoder) {
  for (bool transposed : {false, true}) {
    const SyntheticHead h = synthetic_yolov8_head(2100, 5, transposed, 7);
    const TensorView v{h.data.data(), transposed ? Shape{1, h.anchors, 4 + h.nc} : Shape{1, 4 + h.nc, h.anchors}};
    YoloV8Decoder dec({0, h.nc, transposed});
    Detections cpu;
    dec.decode(std::span<const TensorView>(&v, 1), 0, {0.25f, 640, 640}, cpu);
    const Detections ref = reference_decode_yolov8(h, 0.25f);
    ASSERT_EQ(cpu.size(), ref.size()) << "transposed " << transposed;
    ASSERT_GT(ref.size(), 100u);
    for (size_t i = 0; i < ref.size(); ++i) {
      EXPECT_EQ(cpu[i].x1, ref[i].x1);
      EXPECT_EQ(cpu[i].y2, ref[i].y2);
      EXPECT_EQ(cpu[i].score, ref[i].score);
      EXPECT_EQ(cpu[i].class_id, ref[i].class_id) << "candidate " << i;
    }
  }
}

void expect_same_candidates(const Detections& cpu, const Detections& ref, const std::string& what) {
  ASSERT_EQ(cpu.size(), ref.size()) << what;
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_EQ(cpu[i].x1, ref[i].x1) << what << " candidate " << i;
    EXPECT_EQ(cpu[i].y1, ref[i].y1) << what << " candidate " << i;
    EXPECT_EQ(cpu[i].x2, ref[i].x2) << what << " candidate " << i;
    EXPECT_EQ(cpu[i].score, ref[i].score) << what << " candidate " << i;
    EXPECT_EQ(cpu[i].class_id, ref[i].class_id) << what << " candidate " << i;
  }
}

TEST(GpuFramesReference, RowsDecodeIsTheYoloV5AndYoloXDecoders) {
  const SyntheticRowsHead v5 = synthetic_rows_head(2100, 6, {}, 3);
  const TensorView v5v{v5.data.data(), Shape{1, v5.anchors, 5 + v5.nc}};
  Detections cpu;
  YoloV5Decoder({0, v5.nc}).decode(std::span<const TensorView>(&v5v, 1), 0, {0.25f, 320, 320}, cpu);
  const Detections v5ref = reference_decode_rows(v5, 0.25f);
  EXPECT_GT(v5ref.size(), 100u);
  expect_same_candidates(cpu, v5ref, "yolov5");

  const SyntheticRowsHead x = synthetic_rows_head(2100, 6, {8, 16, 32}, 4);  // 40^2 + 20^2 + 10^2 cells
  const TensorView xv{x.data.data(), Shape{1, x.anchors, 5 + x.nc}};
  YoloXHead head;
  head.num_classes = x.nc;
  head.strides = x.strides;
  cpu.clear();
  YoloXDecoder(head).decode(std::span<const TensorView>(&xv, 1), 0, {0.25f, 320, 320}, cpu);
  const Detections xref = reference_decode_rows(x, 0.25f);
  EXPECT_GT(xref.size(), 100u);
  expect_same_candidates(cpu, xref, "yolox");
}

}  // namespace
}  // namespace sd
