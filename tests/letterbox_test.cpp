#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// A smooth BGR picture (gradients and slow waves, no edge sharper than a few levels per pixel),
// where converting colour before or after resizing gives the same values.
cv::Mat smooth_picture(cv::Size size) {
  cv::Mat img(size, CV_8UC3);
  for (int y = 0; y < size.height; ++y)
    for (int x = 0; x < size.width; ++x) {
      double fx = static_cast<double>(x) / size.width, fy = static_cast<double>(y) / size.height;
      img.at<cv::Vec3b>(y, x) = cv::Vec3b(cv::saturate_cast<uint8_t>(40 + 170 * fx),
                                          cv::saturate_cast<uint8_t>(128 + 90 * std::sin(6.0 * fy + 3.0 * fx)),
                                          cv::saturate_cast<uint8_t>(220 - 180 * fy * fx));
    }
  return img;
}

cv::Mat to_i420(const cv::Mat& bgr) {
  cv::Mat i420;
  cv::cvtColor(bgr, i420, cv::COLOR_BGR2YUV_I420);
  return i420;
}

// The naive reference of the I420 path's own arithmetic: the planes resized to the content size
// by OpenCV, then per pixel in double precision: BT.601 limited range to RGB, clamped, scaled.
std::vector<float> reference_i420(const cv::Mat& i420, cv::Size dst, const PreprocessSpec& spec) {
  const int w = i420.cols, h = i420.rows * 2 / 3;
  auto t = LetterboxTransform::compute({w, h}, dst, spec.resize, spec.pad);
  cv::Size content(static_cast<int>(std::lround(t.scale_x * w)), static_cast<int>(std::lround(t.scale_y * h)));
  cv::Mat y = i420.rowRange(0, h).clone();
  cv::Mat u = cv::Mat(h / 2, w / 2, CV_8UC1, const_cast<uint8_t*>(i420.ptr<uint8_t>()) + w * h).clone();
  cv::Mat v = cv::Mat(h / 2, w / 2, CV_8UC1, const_cast<uint8_t*>(i420.ptr<uint8_t>()) + w * h + (w / 2) * (h / 2)).clone();
  // Unscaled frames use each chroma sample for its 2x2 block of Y (as cvtColor does); scaled ones
  // have every plane resized bilinearly to the content size.
  const int chroma_interp = content == cv::Size(w, h) ? cv::INTER_NEAREST : cv::INTER_LINEAR;
  if (y.size() != content) cv::resize(cv::Mat(y), y, content, 0, 0, cv::INTER_LINEAR);
  for (cv::Mat* m : {&u, &v})
    if (m->size() != content) cv::resize(cv::Mat(*m), *m, content, 0, 0, chroma_interp);
  std::vector<float> out(3 * static_cast<size_t>(dst.area()));
  for (int c = 0; c < 3; ++c)
    for (int py = 0; py < dst.height; ++py)
      for (int px = 0; px < dst.width; ++px) {
        int cx = px - static_cast<int>(t.pad_x), cy = py - static_cast<int>(t.pad_y);
        double value = spec.pad_value;
        if (cx >= 0 && cy >= 0 && cx < content.width && cy < content.height) {
          double yy = std::max(0.0, y.at<uint8_t>(cy, cx) - 16.0) * 1.164, uu = u.at<uint8_t>(cy, cx) - 128.0,
                 vv = v.at<uint8_t>(cy, cx) - 128.0;
          double rgb[3] = {yy + 1.596 * vv, yy - 0.391 * uu - 0.813 * vv, yy + 2.018 * uu};
          value = std::clamp(rgb[spec.order == ChannelOrder::kRgb ? c : 2 - c], 0.0, 255.0);
        }
        out[static_cast<size_t>((c * dst.height + py) * dst.width + px)] = static_cast<float>(
            (value * spec.scale - spec.mean[static_cast<size_t>(c)]) / spec.std[static_cast<size_t>(c)]);
      }
  return out;
}

struct I420Case {
  cv::Size src, dst;
  const char* spec;
};
const I420Case kI420Cases[] = {
    {{1280, 720}, {640, 640}, "rgb,letterbox,center"},          // 720p into the square input
    {{1280, 720}, {1280, 736}, "rgb,letterbox,center"},         // stride-aligned: Y not resized
    {{640, 360}, {640, 640}, "bgr,letterbox,topleft,scale=1"},  // chroma upsampled only
    {{322, 180}, {256, 160}, "rgb,stretch,mean=0.485:0.456:0.406,std=0.229:0.224:0.225"},
};

TEST(PreprocessI420, MatchesTheNaiveReference) {
  PreprocessScratch scratch;
  for (const auto& c : kI420Cases) {
    cv::Mat i420(c.src.height * 3 / 2, c.src.width, CV_8UC1);
    cv::randu(i420, 0, 256);  // noise: every clamp and rounding path
    PreprocessSpec spec;
    ASSERT_TRUE(apply_preprocess_overrides(c.spec, spec));
    std::vector<float> got(3 * static_cast<size_t>(c.dst.area()));
    auto t = preprocess_i420(i420, c.dst, spec, got.data(), scratch);
    EXPECT_EQ(t.src_width, c.src.width);
    EXPECT_EQ(t.src_height, c.src.height);
    auto want = reference_i420(i420, c.dst, spec);
    // The reference's coefficients are rounded to 4 digits: within 0.01 of a level.
    const float tol = 0.05f * spec.scale / std::min({spec.std[0], spec.std[1], spec.std[2]});
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << c.spec << " at " << i;
  }
}

TEST(PreprocessI420, GivesWhatTheBgrPathGivesForTheSamePicture) {
  // What a user would notice: a video decoded to I420 reaches the network as it would have after
  // a conversion to BGR (OpenCV's cvtColor, the same matrix) and the BGR letterbox. Only the order
  // of colour conversion, rounding and resizing differs: on a smooth picture under a level on
  // average and a few levels at worst (where a channel clips at 0 or 255).
  PreprocessScratch a, b;
  for (const auto& c : kI420Cases) {
    cv::Mat i420 = to_i420(smooth_picture(c.src));
    cv::Mat bgr;
    cv::cvtColor(i420, bgr, cv::COLOR_YUV2BGR_I420);
    PreprocessSpec spec;
    ASSERT_TRUE(apply_preprocess_overrides(c.spec, spec));
    std::vector<float> from_yuv(3 * static_cast<size_t>(c.dst.area())), from_bgr(from_yuv.size());
    auto ty = preprocess_i420(i420, c.dst, spec, from_yuv.data(), a);
    auto tb = preprocess_frame(bgr, c.dst, spec, from_bgr.data(), b);
    EXPECT_EQ(ty.scale_x, tb.scale_x);
    EXPECT_EQ(ty.pad_x, tb.pad_x);
    EXPECT_EQ(ty.pad_y, tb.pad_y);
    const float level = spec.scale / std::min({spec.std[0], spec.std[1], spec.std[2]});
    double sum = 0, worst = 0;
    for (size_t i = 0; i < from_yuv.size(); ++i) {
      double d = std::abs(from_yuv[i] - from_bgr[i]);
      sum += d;
      worst = std::max(worst, d);
    }
    EXPECT_LE(worst, 4.0 * level) << c.spec;
    EXPECT_LE(sum / static_cast<double>(from_yuv.size()), 0.6 * level) << c.spec;
  }
}

TEST(PreprocessI420, AFrameIsPreprocessedInTheFormatItHolds) {
  cv::Mat picture = smooth_picture({320, 180});
  Frame f;
  f.image = cv::Mat(90, 60, CV_8UC3, cv::Scalar(0, 0, 0));  // stale BGR from an earlier frame
  f.yuv = to_i420(picture);
  f.format = PixelFormat::kI420;
  EXPECT_EQ(f.size(), cv::Size(320, 180));
  PreprocessSpec spec;
  PreprocessScratch scratch;
  std::vector<float> via_frame(3 * 256 * 160), direct(via_frame.size());
  preprocess_frame(f, {256, 160}, spec, via_frame.data(), scratch);
  preprocess_i420(f.yuv, {256, 160}, spec, direct.data(), scratch);
  EXPECT_EQ(via_frame, direct);
  // Asking for BGR converts once; from then on the frame is BGR.
  cv::Mat& bgr = f.bgr();
  EXPECT_EQ(f.format, PixelFormat::kBgr);
  EXPECT_EQ(bgr.size(), cv::Size(320, 180));
  EXPECT_LE(cv::norm(bgr, picture, cv::NORM_INF), 8.0);  // 4:2:0 round trip of a smooth picture
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
