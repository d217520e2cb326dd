#include <gtest/gtest.h>

#include <random>

#include <opencv2/imgproc.hpp>

#include "preprocess/letterbox.h"

namespace sd {
namespace {

TEST(Letterbox, Hd720IntoStrideAlignedInputNeedsNoScaling) {
  auto t = LetterboxTransform::compute({1280, 720}, {1280, 736}, ResizeMode::kLetterbox, PadPlacement::kCenter);
  EXPECT_FLOAT_EQ(t.scale_x, 1.f);
  EXPECT_FLOAT_EQ(t.scale_y, 1.f);
  EXPECT_FLOAT_EQ(t.pad_x, 0.f);
  EXPECT_FLOAT_EQ(t.pad_y, 8.f);
}

TEST(Letterbox, SquareInputPadsTheShortSide) {
  auto t = LetterboxTransform::compute({1280, 720}, {640, 640}, ResizeMode::kLetterbox, PadPlacement::kCenter);
  EXPECT_FLOAT_EQ(t.scale_x, 0.5f);
  EXPECT_FLOAT_EQ(t.scale_y, 0.5f);
  EXPECT_FLOAT_EQ(t.pad_y, 140.f);
  auto tl = LetterboxTransform::compute({1280, 720}, {640, 640}, ResizeMode::kLetterbox, PadPlacement::kTopLeft);
  EXPECT_FLOAT_EQ(tl.pad_x, 0.f);
  EXPECT_FLOAT_EQ(tl.pad_y, 0.f);
}

TEST(Letterbox, BoxesRoundTripExactlyForEveryModeAndSize) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dim(16, 2000);
  for (int trial = 0; trial < 500; ++trial) {
    cv::Size src(dim(rng), dim(rng)), dst(32 * (1 + dim(rng) % 40), 32 * (1 + dim(rng) % 40));
    for (auto mode : {ResizeMode::kLetterbox, ResizeMode::kStretch})
      for (auto pad : {PadPlacement::kCenter, PadPlacement::kTopLeft}) {
        auto t = LetterboxTransform::compute(src, dst, mode, pad);
        std::uniform_real_distribution<float> fx(0, static_cast<float>(src.width)), fy(0, static_cast<float>(src.height));
        float a = fx(rng), b = fx(rng), c = fy(rng), d = fy(rng);
        Detection box{std::min(a, b), std::min(c, d), std::max(a, b), std::max(c, d), 0.9f, 1};
        Detection net = box;
        t.map_forward(net);
        // The box lands inside the network input...
        EXPECT_GE(net.x1, -1e-3f);
        EXPECT_LE(net.x2, static_cast<float>(dst.width) + 1e-3f);
        EXPECT_GE(net.y1, -1e-3f);
        EXPECT_LE(net.y2, static_cast<float>(dst.height) + 1e-3f);
        // ...and comes back to where it was.
        t.map_back(net);
        const float tol = 1e-3f * static_cast<float>(std::max(src.width, src.height));
        EXPECT_NEAR(net.x1, box.x1, tol);
        EXPECT_NEAR(net.y1, box.y1, tol);
        EXPECT_NEAR(net.x2, box.x2, tol);
        EXPECT_NEAR(net.y2, box.y2, tol);
      }
  }
}

TEST(Letterbox, MapBackClipsToTheFrame) {
  auto t = LetterboxTransform::compute({1280, 720}, {640, 640}, ResizeMode::kLetterbox, PadPlacement::kCenter);
  Detection d{-10, 100, 700, 600, 0.5f, 0};  // spills into the padding and past the right edge
  t.map_back(d);
  EXPECT_FLOAT_EQ(d.x1, 0.f);
  EXPECT_FLOAT_EQ(d.x2, 1280.f);
  EXPECT_FLOAT_EQ(d.y1, 0.f);
  EXPECT_LE(d.y2, 720.f);
}

// The naive reference: resize with OpenCV, pad, swap channels, scale, one pixel at a time.
std::vector<float> reference_preprocess(const cv::Mat& bgr, cv::Size dst, const PreprocessSpec& spec) {
  auto t = LetterboxTransform::compute(bgr.size(), dst, spec.resize, spec.pad);
  cv::Mat resized;
  cv::resize(bgr, resized, cv::Size(static_cast<int>(std::lround(t.scale_x * bgr.cols)),
                                    static_cast<int>(std::lround(t.scale_y * bgr.rows))));
  cv::Mat canvas(dst, CV_8UC3, cv::Scalar::all(spec.pad_value));
  resized.copyTo(canvas(cv::Rect(static_cast<int>(t.pad_x), static_cast<int>(t.pad_y), resized.cols, resized.rows)));
  std::vector<float> out(3 * static_cast<size_t>(dst.area()));
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < dst.height; ++y)
      for (int x = 0; x < dst.width; ++x) {
        int src_c = spec.order == ChannelOrder::kRgb ? 2 - c : c;
        float v = canvas.at<cv::Vec3b>(y, x)[src_c] * spec.scale;
        out[static_cast<size_t>((c * dst.height + y) * dst.width + x)] =
            (v - spec.mean[static_cast<size_t>(c)]) / spec.std[static_cast<size_t>(c)];
      }
  return out;
}

TEST(Preprocess, MatchesTheNaiveReference) {
  cv::Mat img(97, 181, CV_8UC3);
  cv::randu(img, 0, 256);
  PreprocessScratch scratch;
  for (auto spec_text : {"rgb,letterbox,center", "bgr,letterbox,topleft,scale=1", "rgb,stretch",
                         "rgb,letterbox,center,mean=0.485:0.456:0.406,std=0.229:0.224:0.225,pad=0"}) {
    PreprocessSpec spec;
    ASSERT_TRUE(apply_preprocess_overrides(spec_text, spec));
    cv::Size dst(128, 96);
    std::vector<float> got(3 * static_cast<size_t>(dst.area()));
    preprocess_frame(img, dst, spec, got.data(), scratch);
    auto want = reference_preprocess(img, dst, spec);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5f) << spec_text << " at " << i;
  }
}

TEST(PreprocessSpec, FamilyDefaults) {
  auto yolox = spec_for_layout(Layout::kYoloX);
  EXPECT_EQ(yolox.order, ChannelOrder::kBgr);
  EXPECT_EQ(yolox.scale, 1.f);
  EXPECT_EQ(yolox.pad, PadPlacement::kTopLeft);
  auto v8 = spec_for_layout(Layout::kYoloV8);
  EXPECT_EQ(v8.order, ChannelOrder::kRgb);
  EXPECT_FLOAT_EQ(v8.scale, 1.f / 255.f);
  EXPECT_EQ(v8.pad, PadPlacement::kCenter);
  EXPECT_EQ(v8.pad_value, 114);
  EXPECT_EQ(spec_for_layout(Layout::kDarknet, false).resize, ResizeMode::kStretch);
  EXPECT_EQ(spec_for_layout(Layout::kDarknet, true).resize, ResizeMode::kLetterbox);
}

TEST(PreprocessSpec, OverridesParseAndRejectNonsense) {
  PreprocessSpec s;
  ASSERT_TRUE(apply_preprocess_overrides("bgr,scale=1/255,topleft,stretch,pad=0", s));
  EXPECT_EQ(s.order, ChannelOrder::kBgr);
  EXPECT_FLOAT_EQ(s.scale, 1.f / 255.f);
  EXPECT_EQ(s.pad, PadPlacement::kTopLeft);
  EXPECT_EQ(s.resize, ResizeMode::kStretch);
  EXPECT_EQ(s.pad_value, 0);
  for (auto bad : {"rgba", "scale=abc", "pad=300", "mean=1:2", "std=1:0:1"}) {
    auto st = apply_preprocess_overrides(bad, s);
    ASSERT_FALSE(st) << bad;
    EXPECT_EQ(st.error().code, ErrorCode::kUsage);
    EXPECT_NE(st.error().message.find("--preprocess"), std::string::npos);
  }
}

}  // namespace
}  // namespace sd
