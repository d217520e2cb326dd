// Outputs are never lost, overwritten or left broken: an output that is also an input (any file a
// source reads, each image of a folder or glob included) is refused before anything runs, and two
// sources whose videos would share a name are both named; a writer that cannot work fails before the first frame and leaves no file;
// a full disk is an error naming the file and leaves the final name absent (or an earlier good
// file untouched); JSON Lines hold whole lines at every moment, even after kill -9; a second
// Ctrl-C leaves no temporary file behind.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "cli_util.h"
#include "core/error.h"
#include "test_util.h"

namespace sd {
namespace {

namespace fs = std::filesystem;
using test::kTinyModel;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// The only line on stderr, which must name `thing`.
void expect_one_line_naming(const test::CliResult& r, const std::string& thing, const std::string& what) {
  auto lines = test::nonempty_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << what << ": " << r.err;
  EXPECT_NE(lines[0].find(thing), std::string::npos) << what << ": " << lines[0];
}

// Waits (a hang guard, not a measurement) until the JSONL file has `lines` lines.
bool wait_for_lines(const std::string& path, size_t lines) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (test::count_lines(path) < lines) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::vector<std::string> run_args_for(const std::string& source, const std::vector<std::string>& more) {
  std::vector<std::string> args = {"run", "-m", kTinyModel, "-s", source, "-q"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(RobustnessOutputs, AnOutputThatIsAnInputIsRefusedBeforeAnythingRuns) {
  test::TempDir dir;
  test::write_numbered_mp4(dir.file("in.mp4"), 5);
  test::write_numbered_mp4(dir.file("b.mp4"), 5);
  const std::string clip = dir.file("in.mp4");
  const std::string clip_bytes = test::read_file(clip);
  const std::string model_copy = dir.file("m.onnx");
  fs::copy_file(kTinyModel, model_copy);
  const std::string model_bytes = test::read_file(model_copy);
  struct Case {
    std::vector<std::string> args;
    std::string mentions;
  };
  const std::string relative_clip = fs::relative(clip, fs::current_path()).string();
  const std::vector<Case> cases = {
      {{"-s", clip, "-o", clip}, "-o " + clip + " is the input --source " + clip},
      {{"-s", clip, "-o", relative_clip}, "is the input --source"},
      {{"-s", clip, "-d", clip}, "-d " + clip + " is the input --source"},
      {{"-s", clip, "-o", model_copy}, "is the input --model"},
      {{"-s", clip, "--profile-json", model_copy}, "is the input --model"},
      {{"-s", clip, "-o", dir.file("o.mp4"), "-d", dir.file("o.mp4")}, "are the same file"},
      {{"-s", clip, "-d", dir.file("x.json"), "--trace", dir.file("x.json")}, "are the same file"},
      // Two sources whose {name} gives the same output.
      {{"-s", clip, "-s", dir.file("sub/in.mp4"), "-o", dir.file("out_{name}.mp4")}, "are the same file"},
  };
  fs::create_directories(dir.file("sub"));
  fs::copy_file(clip, dir.file("sub/in.mp4"));
  for (const auto& c : cases) {
    std::vector<std::string> args = {"run", "-m", model_copy, "-q"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    test::CliResult r = test::run_cli(dir, args);
    EXPECT_EQ(r.code, exit_code::kOutput) << c.mentions << ": " << r.err;
    expect_one_line_naming(r, c.mentions, c.mentions);
    EXPECT_EQ(test::read_file(clip), clip_bytes) << "the source was overwritten";
    EXPECT_EQ(test::read_file(model_copy), model_bytes) << "the model was overwritten";
  }
  EXPECT_FALSE(fs::exists(dir.file("o.mp4")));
  EXPECT_FALSE(fs::exists(dir.file("x.json")));
}

TEST(RobustnessOutputs, AnImageThatAFolderOrGlobSourceReadsIsNeverAnOutput) {
  test::TempDir dir;
  fs::create_directories(dir.file("imgs"));
  for (const std::string name : {"a.png", "b.png"}) cv::imwrite(dir.file("imgs/" + name), test::numbered_frame(1));
  const std::string a_bytes = test::read_file(dir.file("imgs/a.png"));
  const std::string b_bytes = test::read_file(dir.file("imgs/b.png"));
  const std::string folder = dir.file("imgs");
  const std::string glob = dir.file("imgs/*.png");
  struct Case {
    std::string source;
    std::vector<std::string> output;
  };
  const std::vector<Case> cases = {
      {folder, {"-d", dir.file("imgs/a.png")}},
      {folder, {"--profile-json", dir.file("imgs/b.png")}},
      {folder + "/", {"--trace", dir.file("imgs/a.png")}},
      {glob, {"--report", dir.file("imgs/b.png")}},
      {glob, {"-d", dir.file("imgs/a.png")}},
      {glob, {"--sink", dir.file("imgs/a.png.jsonl"), "--profile-json", dir.file("imgs/b.png")}},
  };
  for (const auto& c : cases) {
    test::CliResult r = test::run_cli(dir, run_args_for(c.source, c.output));
    const std::string named = c.output[c.output.size() - 1];
    EXPECT_EQ(r.code, exit_code::kOutput) << c.source << " " << named << ": " << r.err;
    auto lines = test::nonempty_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_NE(lines[0].find(named + " is the input --source " + named + " (an image of " + c.source + ")"), std::string::npos)
        << lines[0];
    EXPECT_EQ(test::read_file(dir.file("imgs/a.png")), a_bytes);
    EXPECT_EQ(test::read_file(dir.file("imgs/b.png")), b_bytes);
    EXPECT_EQ(test::list_dir(folder), (std::vector<std::string>{"a.png", "b.png"})) << "something was written";
  }
}

TEST(RobustnessOutputs, TwoSourcesWhoseVideoNamesCollideAreBothNamed) {
  test::TempDir dir;
  test::write_numbered_mp4(dir.file("in.mp4"), 3);
  fs::create_directories(dir.file("sub"));
  fs::copy_file(dir.file("in.mp4"), dir.file("sub/in.mp4"));
  test::CliResult r = test::run_cli(dir, {"run", "-m", kTinyModel, "-q", "-s", dir.file("in.mp4"), "-s", dir.file("sub/in.mp4"), "-o",
                                          dir.file("out_{name}.mp4")});
  EXPECT_EQ(r.code, exit_code::kOutput) << r.err;
  auto lines = test::nonempty_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("(for --source " + dir.file("in.mp4") + ")"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("(for --source " + dir.file("sub/in.mp4") + ")"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("are the same file"), std::string::npos) << lines[0];
}

TEST(RobustnessOutputs, AWriterThatCannotWorkFailsBeforeTheFirstFrameAndLeavesNoFile) {
  test::TempDir dir;
  const std::string src = "synth:w=64,h=64,frames=3";
  struct Case {
    std::vector<std::string> args;
    std::string mentions;
  };
  const std::vector<Case> cases = {
      {{"-o", dir.file("annot.png")}, "annot.png: not a video file name"},
      {{"-o", dir.file("out.xyz")}, "out.xyz: not a video file name"},
      {{"-o", dir.file("missing/out.mp4")}, "missing/out.mp4"},
      {{"-o", dir.path().string() + "/"}, "cannot write video"},
      {{"--profile-json", dir.file("missing/p.json")}, "missing/p.json"},
      {{"--trace", dir.file("missing/t.json")}, "missing/t.json"},
      {{"-d", dir.file("missing/d.jsonl")}, "missing/d.jsonl"},
      // A bad later output leaves none of the earlier ones behind.
      {{"-d", dir.file("d.jsonl"), "--profile-json", dir.file("p.json"), "-o", dir.file("bad.txt")}, "bad.txt"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"run", "-m", kTinyModel, "-s", src, "-q"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    test::CliResult r = test::run_cli(dir, args);
    EXPECT_EQ(r.code, exit_code::kOutput) << c.mentions << ": " << r.err;
    expect_one_line_naming(r, c.mentions, c.mentions);
    EXPECT_EQ(test::list_dir(dir.path().string()), std::vector<std::string>{"stderr.txt"}) << c.mentions << ": a file was left";
  }
}

TEST(RobustnessOutputs, EveryOutputIsCompleteAfterARunAndNoTemporaryIsLeft) {
  test::TempDir dir;
  test::CliResult r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=320,h=192,frames=12", "-q", "-o", dir.file("v.mp4"),
                                          "-d", dir.file("d.jsonl"), "--profile-json", dir.file("p.json"), "--trace", dir.file("t.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(test::list_dir(dir.path().string()), (std::vector<std::string>{"d.jsonl", "p.json", "stderr.txt", "t.json", "v.mp4"}));
  EXPECT_EQ(test::count_video_frames(dir.file("v.mp4")), 12);
  EXPECT_EQ(test::count_valid_jsonl_lines(dir.file("d.jsonl")), 12);
  EXPECT_TRUE(nlohmann::json::accept(test::read_file(dir.file("p.json"))));
  EXPECT_TRUE(nlohmann::json::accept(test::read_file(dir.file("t.json"))));
}

// A full disk, as the file-size limit of the process (EFBIG on every machine, no root needed):
// exit 5 naming the file; the video is not left under its name, and an earlier good file of that
// name is untouched; the JSON Lines are cut back to whole lines.
TEST(RobustnessOutputs, AFullDiskFailsNamingTheFileAndLeavesNothingBroken) {
  test::TempDir dir;
  write_text(dir.file("v.mp4"), "an earlier good video");
  test::SpawnOptions limited;
  limited.file_size_limit = 64 * 1024;
  test::CliResult r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=640,h=360,frames=60", "-q", "-o", dir.file("v.mp4")},
                                    limited);
  EXPECT_EQ(r.code, exit_code::kOutput) << r.err;
  EXPECT_NE(test::last_line(r.err).find("video " + dir.file("v.mp4") + " failed"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_file(dir.file("v.mp4")), "an earlier good video");
  EXPECT_EQ(test::list_dir(dir.path().string()), (std::vector<std::string>{"stderr.txt", "v.mp4"}));

  limited.file_size_limit = 2000;  // a few lines
  r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=320,h=192,frames=60", "-q", "-d", dir.file("d.jsonl")}, limited);
  EXPECT_EQ(r.code, exit_code::kOutput) << r.err;
  EXPECT_NE(test::last_line(r.err).find("writing detections to " + dir.file("d.jsonl") + " failed"), std::string::npos) << r.err;
  const int64_t lines = test::count_valid_jsonl_lines(dir.file("d.jsonl"));
  EXPECT_GT(lines, 0);
  EXPECT_LT(lines, 60);
}

// The same on a real small file system, where the machine lets the test mount one.
TEST(RobustnessOutputs, AFullTmpfsFailsNamingTheFile) {
  test::TempDir dir;
  const std::string mnt = dir.file("small");
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=256k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN): the file-size limit test covers a full disk";
  test::CliResult r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=640,h=360,frames=90", "-q", "-o", mnt + "/v.mp4",
                                          "-d", mnt + "/d.jsonl"});
  const auto left = test::list_dir(mnt);
  const int64_t lines = test::count_valid_jsonl_lines(mnt + "/d.jsonl");
  const int64_t frames_if_kept = fs::exists(mnt + "/v.mp4") ? test::count_video_frames(mnt + "/v.mp4") : -1;
  ::umount2(mnt.c_str(), MNT_DETACH);
  EXPECT_EQ(r.code, exit_code::kOutput) << r.err;
  EXPECT_NE(test::last_line(r.err).find(mnt), std::string::npos) << r.err;
  EXPECT_GE(lines, 0) << "whole lines only";
  // The video is either not left under its name (nor its temporary), or complete up to the
  // frame where the other output failed (the JSON line of a frame is written before its video frame).
  for (const auto& name : left) EXPECT_TRUE(name == "d.jsonl" || name == "v.mp4") << name;
  if (std::find(left.begin(), left.end(), "v.mp4") != left.end()) EXPECT_EQ(frames_if_kept, lines);
}

TEST(RobustnessOutputs, JsonLinesAreWholeLinesAfterKillDashNine) {
  test::TempDir dir;
  test::Process p = test::spawn_streamdet({"run", "-m", kTinyModel, "-s", "synth:w=320,h=192,fps=60,frames=0,live=1", "-q", "-d",
                                           dir.file("d.jsonl")},
                                          dir.file("stderr.txt"));
  ASSERT_TRUE(wait_for_lines(dir.file("d.jsonl"), 10)) << test::read_file(dir.file("stderr.txt"));
  kill(p.pid, SIGKILL);
  EXPECT_EQ(test::wait_exit_code(p), 128 + SIGKILL);
  EXPECT_GE(test::count_valid_jsonl_lines(dir.file("d.jsonl")), 10) << "a torn or buffered last line";
}

// A second Ctrl-C ends at once: exit 130, no temporary file left; the video is absent (it was not
// finished) or complete, and the JSON Lines whole.
TEST(RobustnessOutputs, ASecondCtrlCLeavesEveryOutputValidOrAbsent) {
  test::TempDir dir;
  test::Process p = test::spawn_streamdet({"run", "-m", kTinyModel, "-s", "synth:w=320,h=192,fps=60,frames=0,live=1", "-q", "-o",
                                           dir.file("v.mp4"), "-d", dir.file("d.jsonl"), "--trace", dir.file("t.json")},
                                          dir.file("stderr.txt"));
  ASSERT_TRUE(wait_for_lines(dir.file("d.jsonl"), 10)) << test::read_file(dir.file("stderr.txt"));
  kill(p.pid, SIGINT);
  kill(p.pid, SIGINT);
  EXPECT_EQ(test::wait_exit_code(p), exit_code::kInterrupted) << test::read_file(dir.file("stderr.txt"));
  for (const auto& name : test::list_dir(dir.path().string())) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
  const int64_t lines = test::count_valid_jsonl_lines(dir.file("d.jsonl"));
  EXPECT_GE(lines, 10);
  if (fs::exists(dir.file("v.mp4"))) EXPECT_EQ(test::count_video_frames(dir.file("v.mp4")), lines);
}

// SIGTERM and SIGHUP (a closed terminal) finish the run like Ctrl-C: outputs complete, exit 130.
TEST(RobustnessOutputs, SigtermAndSighupFinalizeLikeCtrlC) {
  for (int sig : {SIGTERM, SIGHUP}) {
    test::TempDir dir;
    test::Process p = test::spawn_streamdet({"run", "-m", kTinyModel, "-s", "synth:w=320,h=192,fps=60,frames=0,live=1", "-q", "-o",
                                             dir.file("v.mp4"), "-d", dir.file("d.jsonl")},
                                            dir.file("stderr.txt"));
    ASSERT_TRUE(wait_for_lines(dir.file("d.jsonl"), 10)) << test::read_file(dir.file("stderr.txt"));
    kill(p.pid, sig);
    EXPECT_EQ(test::wait_exit_code(p), exit_code::kInterrupted) << sig << ": " << test::read_file(dir.file("stderr.txt"));
    const int64_t lines = test::count_valid_jsonl_lines(dir.file("d.jsonl"));
    EXPECT_GE(lines, 10) << sig;
    EXPECT_EQ(test::count_video_frames(dir.file("v.mp4")), lines) << sig;
    EXPECT_EQ(test::list_dir(dir.path().string()), (std::vector<std::string>{"d.jsonl", "stderr.txt", "v.mp4"})) << sig;
  }
}

}  // namespace
}  // namespace sd
