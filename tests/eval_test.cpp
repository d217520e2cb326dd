#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "eval/clip_eval.h"
#include "eval/match.h"

namespace sd::eval {
namespace {

Detection det(float x1, float y1, float x2, float y2, float score, int cls = 0) {
  Detection d;
  d.x1 = x1, d.y1 = y1, d.x2 = x2, d.y2 = y2, d.score = score, d.class_id = cls;
  return d;
}

GroundTruthBox gt(float x1, float y1, float x2, float y2, int cls = 0, bool ignore = false) {
  return {det(x1, y1, x2, y2, 1.f, cls), ignore};
}

void expect_counts(const MatchCounts& c, int tp, int fp, int fn, int ignored = 0) {
  EXPECT_EQ(c.true_positives, tp);
  EXPECT_EQ(c.false_positives, fp);
  EXPECT_EQ(c.false_negatives, fn);
  EXPECT_EQ(c.ignored_detections, ignored);
}

TEST(EvalMatch, PerfectDetectionsAreAllTruePositives) {
  std::vector<GroundTruthBox> truth = {gt(0, 0, 10, 10, 0), gt(20, 20, 40, 30, 1)};
  std::vector<Detection> dets = {det(21, 20, 40, 31, 0.7f, 1), det(0, 1, 10, 10, 0.9f, 0)};
  MatchCounts c = match_frame(dets, truth);
  expect_counts(c, 2, 0, 0);
  EXPECT_DOUBLE_EQ(c.precision(), 1.0);
  EXPECT_DOUBLE_EQ(c.recall(), 1.0);
}

TEST(EvalMatch, IouThresholdIsInclusive) {
  std::vector<GroundTruthBox> truth = {gt(0, 0, 10, 10)};
  // IoU exactly 0.5 (50 / 100) matches; just below does not.
  expect_counts(match_frame(std::vector{det(0, 0, 10, 5, 0.9f)}, truth), 1, 0, 0);
  expect_counts(match_frame(std::vector{det(0, 0, 10, 4.9f, 0.9f)}, truth), 0, 1, 1);
}

TEST(EvalMatch, WrongClassIsAFalsePositiveAndAMiss) {
  std::vector<GroundTruthBox> truth = {gt(0, 0, 10, 10, 2)};
  std::vector<Detection> dets = {det(0, 0, 10, 10, 0.9f, 1)};
  expect_counts(match_frame(dets, truth), 0, 1, 1);
  MatchOptions agnostic;
  agnostic.class_aware = false;
  expect_counts(match_frame(dets, truth, agnostic), 1, 0, 0);
}

TEST(EvalMatch, DuplicateDetectionsCountOnceEachBoxMatchesOnce) {
  std::vector<GroundTruthBox> truth = {gt(0, 0, 10, 10)};
  std::vector<Detection> dets = {det(0, 0, 10, 10, 0.9f), det(1, 0, 10, 10, 0.8f), det(0, 1, 10, 10, 0.7f)};
  MatchCounts c = match_frame(dets, truth);
  expect_counts(c, 1, 2, 0);
  EXPECT_DOUBLE_EQ(c.precision(), 1.0 / 3.0);
}

TEST(EvalMatch, HigherScoreChoosesFirstAndTakesItsBestIou) {
  // d_high overlaps A (IoU 0.67) and B (0.82); d_low overlaps only B (0.82; A 0.43).
  // Greedy by score: d_high takes B, d_low finds B taken -> FP, A is missed. Listing d_low
  // first must not change that (input order is not score order).
  std::vector<GroundTruthBox> truth = {gt(0, 0, 10, 10), gt(3, 0, 13, 10)};
  std::vector<Detection> dets = {det(4, 0, 14, 10, 0.8f), det(2, 0, 12, 10, 0.9f)};
  expect_counts(match_frame(dets, truth), 1, 1, 1);
}

TEST(EvalMatch, IgnoredTruthIsNeitherRewardedNorPenalised) {
  std::vector<GroundTruthBox> truth = {gt(0, 0, 10, 10, 0, /*ignore=*/true), gt(50, 50, 60, 60)};
  // Two detections on the ignored box: neither is a false positive; missing it is no miss.
  std::vector<Detection> dets = {det(0, 0, 10, 10, 0.9f), det(1, 1, 10, 10, 0.8f), det(50, 50, 60, 60, 0.5f)};
  MatchCounts c = match_frame(dets, truth);
  expect_counts(c, 1, 0, 0, 2);
  EXPECT_DOUBLE_EQ(c.precision(), 1.0);
  expect_counts(match_frame(std::vector<Detection>{}, truth), 0, 0, 1);
  // A detection of the ignored box's class elsewhere, or of another class on it, is still false.
  expect_counts(match_frame(std::vector{det(0, 0, 10, 10, 0.9f, 3)}, truth), 0, 1, 1);
}

TEST(EvalMatch, PrefersARealBoxOverAnIgnoredOne) {
  std::vector<GroundTruthBox> truth = {gt(0, 0, 10, 10, 0, true), gt(1, 0, 11, 10)};
  expect_counts(match_frame(std::vector{det(0, 0, 10, 10, 0.9f)}, truth), 1, 0, 0);
}

TEST(EvalMatch, EmptyInputsGiveDefinedRatios) {
  MatchCounts none = match_frame(std::vector<Detection>{}, std::vector<GroundTruthBox>{});
  expect_counts(none, 0, 0, 0);
  EXPECT_DOUBLE_EQ(none.precision(), 1.0);
  EXPECT_DOUBLE_EQ(none.recall(), 1.0);
  MatchCounts missed = match_frame(std::vector<Detection>{}, std::vector{gt(0, 0, 5, 5)});
  EXPECT_DOUBLE_EQ(missed.recall(), 0.0);
}

std::filesystem::path write_file(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / ("streamdet_eval_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path;
}

TEST(EvalClip, CountsMissingAndUnexpectedFramesAndSplitsByClass) {
  auto truth = write_file("truth.jsonl",
                          R"({"source": "c", "frame": 0, "timestamp_ms": 0.0, "detections": [)"
                          R"({"box": [0, 0, 10, 10], "class_id": 0, "confidence": 1.0, "ignore": false},)"
                          R"({"box": [20, 0, 30, 10], "class_id": 2, "confidence": 1.0, "ignore": false}]})"
                          "\n\n"
                          R"({"frame": 1, "detections": [{"box": [0, 0, 10, 10], "class_id": 1, "ignore": true}]})"
                          "\n"
                          R"({"frame": 2, "detections": [{"box": [0, 0, 10, 10], "class_id": 1}]})"
                          "\n");
  // Frame 0: class 0 found, class 2 boxed as class 0 (FP + FN). Frame 1: the ignored box found.
  // Frame 2: no line (its box is missed). Frame 7: not in the truth (its box is false).
  auto dets = write_file("dets.jsonl",
                         R"({"frame": 0, "detections": [{"box": [0, 0, 10, 10], "class_id": 0, "confidence": 0.9},)"
                         R"({"box": [20, 0, 30, 10], "class_id": 0, "confidence": 0.8}]})"
                         "\n"
                         R"({"frame": 1, "detections": [{"box": [0, 0, 10, 10], "class_id": 1, "confidence": 0.6}]})"
                         "\n"
                         R"({"frame": 7, "detections": [{"box": [0, 0, 10, 10], "class_id": 1, "confidence": 0.6}]})"
                         "\n");
  auto ev = evaluate_clip(truth.string(), dets.string());
  ASSERT_TRUE(ev) << ev.error().message;
  EXPECT_EQ(ev->frames, 3);
  EXPECT_EQ(ev->frames_missing, 1);
  EXPECT_EQ(ev->frames_unexpected, 1);
  expect_counts(ev->total, 1, 2, 2, 1);
  ASSERT_EQ(ev->per_class.size(), 3u);
  expect_counts(ev->per_class[0], 1, 1, 0);
  expect_counts(ev->per_class[1], 0, 1, 1, 1);
  expect_counts(ev->per_class[2], 0, 0, 1);
  std::filesystem::remove(truth);
  std::filesystem::remove(dets);
}

TEST(EvalClip, ReportsTheFileAndLineOfBadInput) {
  auto bad = write_file("bad.jsonl", "{\"frame\": 0, \"detections\": []}\n{\"frame\": 1, \"detections\": [{\"box\": [1, 2]}]}\n");
  auto r = read_frames_jsonl(bad.string());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kSource);
  EXPECT_NE(r.error().message.find(bad.string() + ":2"), std::string::npos) << r.error().message;

  auto twice = write_file("twice.jsonl", "{\"frame\": 3, \"detections\": []}\n{\"frame\": 3, \"detections\": []}\n");
  auto t = read_frames_jsonl(twice.string());
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("frame 3 appears twice"), std::string::npos) << t.error().message;

  auto garbage = write_file("garbage.jsonl", "not json\n");
  EXPECT_FALSE(read_frames_jsonl(garbage.string()));
  EXPECT_FALSE(read_frames_jsonl("/nonexistent/streamdet/x.jsonl"));
  for (const auto& p : {bad, twice, garbage}) std::filesystem::remove(p);
}

}  // namespace
}  // namespace sd::eval
