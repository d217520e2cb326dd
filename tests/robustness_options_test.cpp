// Option values a user can get wrong: every numeric option refuses NaN, infinities and values out
// of its range with exit 2 and one line that names the option and the range in human terms;
// thread counts are bounded so that a typo cannot stall the machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "app/option_checks.h"
#include "cli_util.h"
#include "core/build_info.h"
#include "core/error.h"
#include "runtime/worker_plan.h"

namespace sd {
namespace {

using test::kTinyModel;

struct OptionCase {
  std::vector<std::string> args;
  std::string mentions;  // what the one error line must say
};

TEST(RobustnessOptions, NanAndOutOfRangeValuesAreRefusedWithAHumanRange) {
  test::TempDir dir;
  const std::string src = "synth:w=64,h=64,frames=2";
  const std::vector<OptionCase> cases = {
      {{"--iou", "nan"}, "--iou: must be a number in (0, 1], got nan"},
      {{"--iou", "0"}, "--iou: must be a number in (0, 1]"},
      {{"--iou", "-0.5"}, "--iou: must be a number in (0, 1]"},
      {{"--conf", "nan"}, "--conf: must be a number in [0, 1]"},
      {{"--conf", "1.01"}, "--conf: must be a number in [0, 1]"},
      {{"--max-age", "-1"}, "--max-age: must be a number of ms in [0, 3600000], got -1"},
      {{"--max-age", "nan"}, "--max-age: must be a number of ms in [0, 3600000]"},
      {{"--batch-wait", "inf"}, "--batch-wait: must be a number of ms in [0, 10000]"},
      {{"--threads", "10000"}, "--threads: must be a whole number from 0 to 1024"},
      {{"--threads", "-1"}, "--threads: must be a whole number from 0 to 1024"},
      {{"--workers", "1000"}, "--workers: must be a whole number from 0 to 64"},
      {{"--batch", "0"}, "--batch: must be a whole number from 1 to 256"},
      {{"--batch", "2.5"}, "--batch: must be a whole number from 1 to 256"},
      {{"--queue", "100000"}, "--queue: must be a whole number from 1 to 4096"},
      {{"--every", "0"}, "--every: must be a whole number from 1 to 1000000"},
      {{"--decode-threads", "nan"}, "--decode-threads: must be a whole number from 0 to 64"},
      {{"--max-det", "0"}, "--max-det: must be a whole number from 1 to 100000"},
      {{"--frames", "-2"}, "--frames: must be a whole number of at least -1"},
      {{"--max-frames", "-2"}, "--frames: must be a whole number of at least -1"},  // the alias: the option's name
      {{"--preprocess", "scale=nan"}, "--preprocess: token 'scale=nan'"},
      {{"--preprocess", "scale=1/0"}, "--preprocess: token 'scale=1/0'"},
      {{"--preprocess", "mean=0:inf:0"}, "--preprocess: token 'mean=0:inf:0'"},
      {{"--preprocess", "std=1:0:1"}, "--preprocess: token 'std=1:0:1'"},
      {{"--engine-profile", "x"}, "--engine-profile: must be a whole number from 0 to 100000"},
      {{"--stall-timeout", "0"}, "--stall-timeout: must be a number of seconds in [0.1, 3600], got 0"},
      {{"--reconnect-for", "nan"}, "--reconnect-for: must be a number of seconds in [0, 31536000]"},
      {{"--reconnect", "sometimes"}, "unknown --reconnect 'sometimes' (auto|never)"},
      {{"--drain-timeout", "-1"}, "--drain-timeout: must be a number of seconds in [0, 3600], got -1"},
      {{"--drain-timeout", "inf"}, "--drain-timeout: must be a number of seconds in [0, 3600]"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"run", "-m", kTinyModel, "-s", src, "-q"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    test::CliResult r = test::run_cli(dir, args);
    const std::string what = c.args[0] + " " + c.args[1];
    EXPECT_EQ(r.code, exit_code::kUsage) << what << ": " << r.err;
    auto lines = test::nonempty_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << what << ": " << r.err;
    EXPECT_NE(lines[0].find(c.mentions), std::string::npos) << what << ": " << lines[0];
    EXPECT_LT(lines[0].size(), 200u) << what << ": no 309-digit limits";
  }
}

TEST(RobustnessOptions, BenchRefusesTheSameValuesAndBadSweepValues) {
  test::TempDir dir;
  for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
           {"--iterations", "0"}, {"--warmup", "-1"}, {"--sweep", "threads=1,nan"}, {"--sweep", "batch=0"}, {"--iou", "nan"}}) {
    std::vector<std::string> args = {"bench", "-m", kTinyModel, "-n", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    test::CliResult r = test::run_cli(dir, args);
    EXPECT_EQ(r.code, exit_code::kUsage) << extra[0] << " " << extra[1] << ": " << r.err;
    EXPECT_EQ(test::nonempty_lines(r.err).size(), 1u) << r.err;
    EXPECT_NE(r.err.find(extra[0]), std::string::npos) << r.err;
  }
}

// More threads than kMaxThreadsPerCore per core is refused before the model loads, naming the
// plan; within the bound the run goes on.
TEST(RobustnessOptions, ThreadsBeyondTheMachineAreRefused) {
  test::TempDir dir;
  const int cores = std::max(1, cpu_count());
  const std::string too_many = std::to_string(kMaxThreadsPerCore * cores + 1);
  test::CliResult r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=64,h=64,frames=2", "-q", "--workers", "1", "--threads", too_many});
  EXPECT_EQ(r.code, exit_code::kUsage) << r.err;
  ASSERT_EQ(test::nonempty_lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("--threads/--workers: 1 worker x " + too_many + " threads"), std::string::npos) << r.err;

  r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=64,h=64,frames=2", "-q", "--workers", "1", "--threads",
                          std::to_string(cores)});
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(RobustnessOptions, EngineProfilePrintsTheSlowestNodesAndIsRefusedByEnginesWithoutOne) {
  test::TempDir dir;
  test::CliResult r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=64,h=64,frames=3", "-q", "--workers", "1",
                                          "--engine-profile", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto at = r.err.find("native engine profile:");
  ASSERT_NE(at, std::string::npos) << r.err;
  auto lines = test::nonempty_lines(r.err.substr(at));
  ASSERT_GE(lines.size(), 5u);
  for (int i = 1; i <= 3; ++i) EXPECT_NE(lines[static_cast<size_t>(i)].find(" ms  "), std::string::npos) << lines[static_cast<size_t>(i)];
  EXPECT_EQ(lines[4], "per op type:");

  r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=64,h=64,frames=3", "-q", "--engine", "opencv", "--engine-profile"});
  EXPECT_EQ(r.code, exit_code::kUnsupported) << r.err;
  EXPECT_NE(test::last_line(r.err).find("--engine-profile"), std::string::npos) << r.err;
}

TEST(RobustnessOptions, HelpListsTheExitCodesAndPointsToTheirDocument) {
  test::TempDir dir;
  test::Process p = test::spawn_streamdet({"--help"}, dir.file("stderr.txt"), {.stdout_path = dir.file("stdout.txt")});
  ASSERT_EQ(test::wait_exit_code(p), 0);
  const std::string help = test::read_file(dir.file("stdout.txt"));
  EXPECT_NE(help.find("7 damaged source"), std::string::npos) << help;
  EXPECT_NE(help.find("docs/errors.md"), std::string::npos) << help;
}

// Every limit in the commands' help reads as a human would write it: no type limits in 19 digits.
TEST(RobustnessOptions, HelpShowsNoMachineLimits) {
  test::TempDir dir;
  for (const char* command : {"run", "bench", "publish"}) {
    test::Process p = test::spawn_streamdet({command, "--help"}, dir.file("stderr.txt"), {.stdout_path = dir.file("stdout.txt")});
    ASSERT_EQ(test::wait_exit_code(p), 0);
    const std::string help = test::read_file(dir.file("stdout.txt"));
    size_t run = 0, longest = 0;
    for (char c : help) {
      run = std::isdigit(static_cast<unsigned char>(c)) ? run + 1 : 0;
      longest = std::max(longest, run);
    }
    EXPECT_LE(longest, 9u) << command << " --help:\n" << help;
  }
}

TEST(OptionChecks, ParsesWholeFiniteNumbersOnly) {
  EXPECT_EQ(parse_finite_number("0.5"), 0.5);
  EXPECT_EQ(parse_finite_number("-2"), -2.0);
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "1e400", "", "0.5x", " 1", "0x10"})
    EXPECT_FALSE(parse_finite_number(bad).has_value()) << bad;
  EXPECT_EQ(parse_integer("42"), 42);
  EXPECT_EQ(parse_integer("-1"), -1);
  for (const char* bad : {"1.0", "1e3", "", "9223372036854775808", "nan", "+-1"}) EXPECT_FALSE(parse_integer(bad).has_value()) << bad;
}

TEST(OptionChecks, IntervalsHonourOpenAndClosedEnds) {
  auto open_low = real_in(0, 1, Interval::kOpenLow);
  auto open_high = real_in(0, 1, Interval::kOpenHigh);
  auto check = [](const CLI::Validator& v, std::string text) { return v(text).empty(); };
  EXPECT_FALSE(check(open_low, "0"));
  EXPECT_TRUE(check(open_low, "1"));
  EXPECT_TRUE(check(open_high, "0"));
  EXPECT_FALSE(check(open_high, "1"));
  EXPECT_FALSE(check(integer_in(1, 3), "4"));
  EXPECT_TRUE(check(integer_in(1, 3), "3"));
}

}  // namespace
}  // namespace sd
