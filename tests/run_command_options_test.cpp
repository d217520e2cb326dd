// run_options_from_keywords(): the keywords of a program that embeds the run (Python's
// streamdet.run(**options)) parsed by `run`'s own options, with the command's checks and messages.
#include "app/run_command_options.h"

#include <gtest/gtest.h>

namespace sd {
namespace {

Result<RunOptions> parse(const std::vector<RunKeyword>& keywords) {
  return run_options_from_keywords("m.onnx", {"a.mp4", "b.mp4"}, keywords);
}

TEST(RunCommandOptions, KeywordsFillTheSameFieldsAsTheCommandLine) {
  auto r = parse({{"policy", {"drop-oldest"}},
                  {"max_age", {"250"}},
                  {"queue", {"7"}},
                  {"serve", {"0"}},
                  {"sink", {"x.jsonl", "redis://127.0.0.1:6379/d"}},
                  {"agnostic", {"true"}},
                  {"track_agnostic", {"false"}},
                  {"max_frames", {"-1"}},
                  {"detections", {"-"}},
                  {"drain_timeout", {"2"}},
                  {"track", {"iou"}}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->model.model, "m.onnx");
  EXPECT_EQ(r->sources, (std::vector<std::string>{"a.mp4", "b.mp4"}));
  EXPECT_EQ(r->policy, FramePolicy::kDropOldest);
  EXPECT_EQ(r->max_age_ms, 250);
  EXPECT_EQ(r->queue, 7);
  EXPECT_EQ(r->serve, "0");
  EXPECT_EQ(r->sinks, (std::vector<std::string>{"x.jsonl", "redis://127.0.0.1:6379/d"}));
  EXPECT_TRUE(r->model.agnostic);
  EXPECT_FALSE(r->tracker.class_agnostic);
  EXPECT_EQ(r->max_frames, -1);
  EXPECT_EQ(r->detections, "-");  // a value starting with a dash is a value, not an option
  EXPECT_EQ(r->drain_timeout_ms, 2000);
  EXPECT_EQ(r->track, TrackMode::kIou);
}

TEST(RunCommandOptions, DefaultsAreTheCommands) {
  auto r = parse({});
  ASSERT_TRUE(r) << r.error().message;
  const RunOptions defaults;
  EXPECT_EQ(r->policy, defaults.policy);
  EXPECT_EQ(r->batch, defaults.batch);
  EXPECT_EQ(r->stall_timeout_ms, defaults.stall_timeout_ms);
  EXPECT_EQ(r->drain_timeout_ms, defaults.drain_timeout_ms);
  EXPECT_EQ(r->model.conf, defaults.model.conf);
  EXPECT_NEAR(r->tracker.new_track_thresh, std::min(1.0, defaults.tracker.track_thresh + 0.1), 1e-9);
}

TEST(RunCommandOptions, BadKeywordsAreUsageErrorsNamingThem) {
  auto expect_usage = [](const std::vector<RunKeyword>& k, const std::string& part) {
    auto r = parse(k);
    ASSERT_FALSE(r) << part;
    EXPECT_EQ(r.error().code, ErrorCode::kUsage);
    EXPECT_NE(r.error().message.find(part), std::string::npos) << r.error().message;
  };
  expect_usage({{"colour", {"red"}}}, "unknown option 'colour'");
  expect_usage({{"source", {"c.mp4"}}}, "unknown option 'source'");
  expect_usage({{"policy", {"sideways"}}}, "unknown --policy 'sideways'");
  expect_usage({{"conf", {"2"}}}, "--conf");
  expect_usage({{"max_age", {"-5"}}}, "--max-age");
  expect_usage({{"agnostic", {"yes"}}}, "agnostic: must be True or False");
  expect_usage({{"reconnect", {"sometimes"}}}, "unknown --reconnect 'sometimes'");
  expect_usage({{"layout", {"yolov99"}}}, "unknown --layout 'yolov99'");
  expect_usage({{"track", {"off"}}, {"line", {"door:0,0,1,1"}}}, "--track is off");
}

}  // namespace
}  // namespace sd
