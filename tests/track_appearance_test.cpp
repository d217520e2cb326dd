// The tracker's appearance cue (track/appearance.h, byte_tracker's fused cost): the colour
// descriptor tells apart what a user would (red from blue, a dark coat from a light one), reads
// BGR and I420 frames alike, and in the tracker it keeps two objects' ids where their boxes alone
// swap them, without ever matching what the boxes would not.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "core/frame.h"
#include "runtime/tracking.h"
#include "track/appearance.h"
#include "track/byte_tracker.h"

namespace sd::track {
namespace {

Detection box(float x1, float y1, float x2, float y2, float score = 0.9f, int cls = 0) {
  Detection d;
  d.x1 = x1;
  d.y1 = y1;
  d.x2 = x2;
  d.y2 = y2;
  d.score = score;
  d.class_id = cls;
  return d;
}

PixelView view_of(const cv::Mat& bgr) {
  return {PixelView::Format::kBgr, bgr.data, bgr.cols, bgr.rows, bgr.step[0]};
}

// A grey picture with a rectangle of `colour` (BGR) at (x, y, w, h).
cv::Mat picture_with(cv::Scalar colour, int x = 40, int y = 30, int w = 60, int h = 50) {
  cv::Mat m(120, 160, CV_8UC3, cv::Scalar(128, 128, 128));
  cv::rectangle(m, cv::Rect(x, y, w, h), colour, cv::FILLED);
  return m;
}

Appearance look_of(cv::Scalar colour) {
  const cv::Mat m = picture_with(colour);
  return describe_box(view_of(m), box(40, 30, 100, 80));
}

TEST(Appearance, SameColoursAreCloseDifferentOnesFar) {
  const cv::Scalar red(40, 40, 210), blue(210, 90, 40);
  const Appearance a = look_of(red);
  ASSERT_TRUE(a.valid);
  float norm = 0;
  for (float v : a.v) norm += v * v;
  EXPECT_NEAR(norm, 1.f, 1e-4);
  EXPECT_NEAR(appearance_distance(a, a), 0.f, 1e-5);
  // The same red, a little off (another camera, light) and elsewhere in another size.
  const cv::Mat other = picture_with(cv::Scalar(50, 35, 200), 10, 10, 100, 90);
  EXPECT_LT(appearance_distance(a, describe_box(view_of(other), box(10, 10, 110, 100))), 0.1f);
  EXPECT_GT(appearance_distance(a, look_of(blue)), 0.9f);
  // One hue, dark against light (a dark and a light coat), and a grey one.
  EXPECT_GT(appearance_distance(look_of(cv::Scalar(20, 20, 110)), look_of(cv::Scalar(150, 150, 250))), 0.5f);
  EXPECT_GT(appearance_distance(a, look_of(cv::Scalar(90, 90, 90))), 0.9f);
}

TEST(Appearance, TheInnerPartCountsNotTheBackgroundAroundTheObject) {
  // A box 20% larger than the object on each side: what it samples is still the object.
  const cv::Scalar red(40, 40, 210);
  const cv::Mat m = picture_with(red);
  const Appearance tight = describe_box(view_of(m), box(40, 30, 100, 80));
  const Appearance loose = describe_box(view_of(m), box(34, 25, 106, 85));
  EXPECT_LT(appearance_distance(tight, loose), 0.02f);
}

TEST(Appearance, BoxesScaledToThePictureAndOutsideItAreHandled) {
  const cv::Mat m = picture_with(cv::Scalar(40, 40, 210));
  // Boxes in a picture twice the size (a frame decoded at half scale).
  EXPECT_LT(appearance_distance(describe_box(view_of(m), box(80, 60, 200, 160), 0.5f, 0.5f), look_of(cv::Scalar(40, 40, 210))),
            1e-5f);
  const Appearance outside = describe_box(view_of(m), box(500, 500, 600, 600));
  EXPECT_FALSE(outside.valid);
  EXPECT_EQ(appearance_distance(outside, look_of(cv::Scalar(40, 40, 210))), 0.f);  // no evidence
  // Half outside: the part inside counts.
  EXPECT_TRUE(describe_box(view_of(m), box(-50, 30, 100, 80)).valid);
}

TEST(Appearance, I420FramesGiveTheDescriptorOfTheirBgr) {
  cv::Mat bgr = picture_with(cv::Scalar(40, 40, 210));
  cv::rectangle(bgr, cv::Rect(100, 20, 40, 80), cv::Scalar(200, 160, 30), cv::FILLED);
  cv::Mat yuv, back;
  cv::cvtColor(bgr, yuv, cv::COLOR_BGR2YUV_I420);
  cv::cvtColor(yuv, back, cv::COLOR_YUV2BGR_I420);
  const PixelView i420{PixelView::Format::kI420, yuv.data, bgr.cols, bgr.rows, static_cast<size_t>(bgr.cols)};
  for (const Detection& d : {box(40, 30, 100, 80), box(100, 20, 140, 100), box(20, 10, 150, 110)})
    EXPECT_LT(appearance_distance(describe_box(i420, d), describe_box(view_of(back), d)), 0.01f);
  // Through the tracking stage's own path, with the frame decoded at half the original size.
  Frame frame;
  frame.format = PixelFormat::kI420;
  frame.yuv = yuv;
  frame.original_size = cv::Size(320, 240);
  const std::vector<Appearance> looks = describe_detections({box(80, 60, 200, 160)}, frame);
  ASSERT_EQ(looks.size(), 1u);
  EXPECT_LT(appearance_distance(looks[0], describe_box(view_of(back), box(40, 30, 100, 80))), 0.01f);
}

TEST(Appearance, TheMovingAverageMovesTowardsWhatIsSeen) {
  const Appearance red = look_of(cv::Scalar(40, 40, 210)), blue = look_of(cv::Scalar(210, 90, 40));
  Appearance track;
  blend_appearance(track, red);  // a track's first look is what it saw
  EXPECT_LT(appearance_distance(track, red), 1e-5f);
  blend_appearance(track, blue);
  const float after_one = appearance_distance(track, blue);
  EXPECT_LT(after_one, appearance_distance(red, blue));
  EXPECT_LT(appearance_distance(track, red), after_one);  // one look moves it a little (keep 0.9)
  for (int i = 0; i < 40; ++i) blend_appearance(track, blue);
  EXPECT_LT(appearance_distance(track, blue), 0.01f);
}

constexpr double kFrameMs = 1000.0 / 30;

// Two objects of one class and size walk towards each other on one line, meet (for `merged`
// frames the detector's NMS keeps one box over both), and walk back the way they came: a motion
// model expects them to have crossed. Returns the ids of (left object, right object) at the end.
std::pair<int64_t, int64_t> meet_and_turn_back(bool with_looks, int merged = 8) {
  ByteTracker tracker;
  const Appearance red = look_of(cv::Scalar(40, 40, 210)), blue = look_of(cv::Scalar(210, 90, 40));
  Appearance both;  // the merged box shows both
  for (int k = 0; k < kAppearanceBins; ++k)
    both.v[static_cast<size_t>(k)] = std::sqrt(0.5f * (red.v[static_cast<size_t>(k)] * red.v[static_cast<size_t>(k)] +
                                                        blue.v[static_cast<size_t>(k)] * blue.v[static_cast<size_t>(k)]));
  both.valid = true;
  int f = 0;
  std::pair<int64_t, int64_t> ids{-1, -1};
  auto step = [&](std::vector<Detection> dets, std::vector<Appearance> looks) {
    const std::vector<int64_t> got = tracker.update(dets, f++ * kFrameMs, with_looks ? looks : std::vector<Appearance>{});
    if (got.size() == 2) ids = {got[0], got[1]};
  };
  const float w = 40;
  float left = 100, right = 220;  // centres
  while (right - left > 24) {     // approach at 3 px a frame each
    step({box(left - w / 2, 100, left + w / 2, 140), box(right - w / 2, 100, right + w / 2, 140)}, {red, blue});
    left += 3;
    right -= 3;
  }
  for (int i = 0; i < merged; ++i) step({box(left - w / 2, 100, right + w / 2, 140)}, {both});
  for (int i = 0; i < 20; ++i) {  // and back
    step({box(left - w / 2, 100, left + w / 2, 140), box(right - w / 2, 100, right + w / 2, 140)}, {red, blue});
    left -= 3;
    right += 3;
  }
  return ids;
}

TEST(ByteTrackerAppearance, ObjectsThatMeetAndTurnBackKeepTheirIdsByTheirColours) {
  const auto [left_before, right_before] = meet_and_turn_back(true, 0);
  ASSERT_GT(left_before, 0);
  ASSERT_NE(left_before, right_before);
  // Boxes alone: the ids come out swapped or new (what this cue is for).
  const auto [left_motion, right_motion] = meet_and_turn_back(false);
  EXPECT_FALSE(left_motion == 1 && right_motion == 2) << left_motion << " " << right_motion;
  // With their colours: each keeps its id.
  const auto [left, right] = meet_and_turn_back(true);
  EXPECT_EQ(left, 1);
  EXPECT_EQ(right, 2);
}

TEST(ByteTrackerAppearance, ColoursNeverMatchWhatTheBoxesDoNotAllow) {
  // An object of the same colour far from where the track is: a new track, not the old id.
  ByteTracker tracker;
  const Appearance red = look_of(cv::Scalar(40, 40, 210));
  std::vector<Appearance> one{red};
  for (int f = 0; f < 5; ++f) tracker.update(std::vector<Detection>{box(10, 10, 50, 50)}, f * kFrameMs, one);
  tracker.update(std::vector<Detection>{box(200, 150, 240, 190)}, 5 * kFrameMs, one);
  const std::vector<int64_t> ids = tracker.update(std::vector<Detection>{box(200, 150, 240, 190)}, 6 * kFrameMs, one);
  EXPECT_EQ(ids[0], 2);
}

TEST(ByteTrackerAppearance, OffOrWithoutDescriptorsItIsTheMotionTracker) {
  TrackerOptions off;
  off.appearance = false;
  ByteTracker with_off(off), without;
  const Appearance red = look_of(cv::Scalar(40, 40, 210)), blue = look_of(cv::Scalar(210, 90, 40));
  for (int f = 0; f < 30; ++f) {
    // Two objects crossing, each reported with the other's colours: off, it makes no difference.
    const std::vector<Detection> dets{box(20.f + 4 * f, 50, 60.f + 4 * f, 90), box(160.f - 4 * f, 60, 200.f - 4 * f, 100)};
    EXPECT_EQ(with_off.update(dets, f * kFrameMs, std::vector<Appearance>{f % 2 ? red : blue, f % 2 ? blue : red}),
              without.update(dets, f * kFrameMs));
  }
}

}  // namespace
namespace {

// An object followed for 15 frames (moving right, 4 px a frame), hidden for 10, comes out `dy` px
// off its path; the id it has on its second frame back.
int64_t id_after_coming_out_off_its_path(double dy, const Appearance* before, const Appearance* after) {
  ByteTracker tracker;
  auto at = [](double cx, double cy) {
    return box(static_cast<float>(cx - 20), static_cast<float>(cy - 20), static_cast<float>(cx + 20), static_cast<float>(cy + 20));
  };
  auto looks = [](const Appearance* a) { return a ? std::vector<Appearance>{*a} : std::vector<Appearance>{}; };
  int f = 0;
  double x = 50;
  for (; f < 15; ++f, x += 4) tracker.update(std::vector<Detection>{at(x, 100)}, f * kFrameMs, looks(before));
  for (int i = 0; i < 10; ++i, ++f, x += 4) tracker.update(std::vector<Detection>{}, f * kFrameMs);
  int64_t id = -1;
  for (int i = 0; i < 2; ++i, ++f, x += 4) id = tracker.update(std::vector<Detection>{at(x, 100 + dy)}, f * kFrameMs, looks(after))[0];
  return id;
}

TEST(ByteTrackerAppearance, ALostObjectComingOutOffItsPredictionIsReFoundOnlyWhenItLooksTheSame) {
  const Appearance red = look_of(cv::Scalar(40, 40, 210)), blue = look_of(cv::Scalar(210, 90, 40));
  // 45 px off after 10 frames: outside the gated round's 95% gate, inside the 99.9% one.
  EXPECT_EQ(id_after_coming_out_off_its_path(45, nullptr, nullptr), 2);  // boxes alone: a new id
  EXPECT_EQ(id_after_coming_out_off_its_path(45, &red, &red), 1);       // the same colours: its id
  EXPECT_EQ(id_after_coming_out_off_its_path(45, &red, &blue), 2);      // another object
  // Further off, colours alone do not bring it back.
  EXPECT_EQ(id_after_coming_out_off_its_path(75, &red, &red), 2);
}


// An object followed for 15 frames (moving right, 4 px a frame) is hidden for `hidden` frames and
// comes out on its path; the id it has on its first and second frame back.
std::pair<int64_t, int64_t> ids_after_hiding(int hidden, const Appearance& before, const Appearance& after, double reid_buffer = 90,
                                              float dy_back = 0) {
  TrackerOptions o;
  o.reid_buffer = reid_buffer;
  ByteTracker tracker(o);
  float dy = 0;
  auto at = [&dy](double cx) { return box(static_cast<float>(cx - 20), 80 + dy, static_cast<float>(cx + 20), 120 + dy); };
  int f = 0;
  double x = 50;
  for (; f < 15; ++f, x += 4) tracker.update(std::vector<Detection>{at(x)}, f * kFrameMs, std::vector<Appearance>{before});
  for (int i = 0; i < hidden; ++i, ++f, x += 4) tracker.update(std::vector<Detection>{}, f * kFrameMs);
  dy = dy_back;
  const int64_t first = tracker.update(std::vector<Detection>{at(x)}, f * kFrameMs, std::vector<Appearance>{after})[0];
  ++f, x += 4;
  return {first, tracker.update(std::vector<Detection>{at(x)}, f * kFrameMs, std::vector<Appearance>{after})[0]};
}

// Hidden for longer than the buffer (1 s), within --track-reid-buffer (3 s): back with its id
// where it looks the same (it had a new one before: the track was gone); another object that
// comes out there gets a new id; so does the same one after longer than 3 s, or with the option off.
TEST(ByteTrackerAppearance, AnObjectHiddenLongerThanTheBufferComesBackWithItsIdWhenItLooksTheSame) {
  const Appearance red = look_of(cv::Scalar(40, 40, 210)), blue = look_of(cv::Scalar(210, 90, 40));
  EXPECT_EQ(ids_after_hiding(45, red, red), std::make_pair(int64_t{1}, int64_t{1}));
  EXPECT_EQ(ids_after_hiding(80, red, red), std::make_pair(int64_t{1}, int64_t{1}));
  EXPECT_EQ(ids_after_hiding(45, red, blue), std::make_pair(int64_t{-1}, int64_t{2}));
  EXPECT_EQ(ids_after_hiding(100, red, red), std::make_pair(int64_t{-1}, int64_t{2}));
  EXPECT_EQ(ids_after_hiding(45, red, red, 30), std::make_pair(int64_t{-1}, int64_t{2}));
  // Within the buffer it is the gated round's, as before.
  EXPECT_EQ(ids_after_hiding(20, red, red), std::make_pair(int64_t{1}, int64_t{1}));
}

// Back after longer than the buffer looking a little different (its box takes in some of the
// grey around it, as a half-seen object's or one at the picture's edge does: further than
// reid_distance, within 3 times it): its id where it comes out right on its prediction, a new
// one where it comes out 60 px off its path (still inside the retired track's wide gate).
TEST(ByteTrackerAppearance, AnObjectHiddenLongerThanTheBufferLookingALittleDifferentGetsItsIdBackOnlyOnItsPrediction) {
  const cv::Mat m = picture_with(cv::Scalar(40, 40, 210));
  const Appearance red = describe_box(view_of(m), box(40, 30, 100, 80));
  const Appearance reddish = describe_box(view_of(m), box(16, 30, 100, 80));  // a fifth of the inner part grey
  const float dist = appearance_distance(red, reddish);
  ASSERT_GT(dist, TrackerOptions{}.reid_distance);
  ASSERT_LT(dist, 3 * TrackerOptions{}.reid_distance);
  EXPECT_EQ(ids_after_hiding(45, red, reddish), std::make_pair(int64_t{1}, int64_t{1}));
  EXPECT_EQ(ids_after_hiding(45, red, reddish, 90, 60), std::make_pair(int64_t{-1}, int64_t{2}));
  EXPECT_EQ(ids_after_hiding(45, red, red, 90, 60), std::make_pair(int64_t{1}, int64_t{1}));  // looking the same: anywhere in the gate
}

}  // namespace
}  // namespace sd::track
