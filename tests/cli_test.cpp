// The streamdet executable as a user runs it: the bundled tiny model finds the shapes of a fresh
// synthetic clip (precision and recall >= 0.9), outputs are complete, every error case exits with
// its documented code and a one-line message naming the thing, and Ctrl-C keeps what was done.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>
#include <opencv2/videoio.hpp>

#include "core/build_info.h"
#include "core/error.h"
#include "engine/native/cuda/cuda_backend.h"
#include "eval/clip_eval.h"
#include "runtime/worker_plan.h"
#include "synthetic/clip_writer.h"
#include "cli_util.h"
#include "test_util.h"

namespace sd {
namespace {

using test::CliResult;
using test::kTinyModel;
using test::kTinyDynamicModel;
using test::last_line;
using test::Process;
using test::run_cli;
using test::spawn_streamdet;
using test::wait_exit_code;

TEST(Cli, TinyModelFindsTheShapesOfAnUnseenClip) {
  test::TempDir dir;
  synth::SceneOptions scene;
  scene.width = 640;
  scene.height = 360;
  scene.frames = 60;
  scene.seed = 31337;  // never used in training
  scene.num_objects = 7;
  ASSERT_TRUE(synth::write_synthetic_clip(scene, dir.file("clip.mp4"), dir.file("truth.jsonl")));
  CliResult r = run_cli(dir, {"run", "-m", kTinyModel, "-s", dir.file("clip.mp4"), "-o", dir.file("out.mp4"), "-d",
                              dir.file("dets.jsonl"), "--profile-json", dir.file("profile.json"), "-q"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto ev = eval::evaluate_clip(dir.file("truth.jsonl"), dir.file("dets.jsonl"));
  ASSERT_TRUE(ev) << ev.error().message;
  std::printf("tiny model, unseen clip: precision %.4f recall %.4f\n", ev->total.precision(), ev->total.recall());
  EXPECT_GE(ev->total.precision(), 0.9);
  EXPECT_GE(ev->total.recall(), 0.9);
  EXPECT_EQ(ev->frames_missing, 0);

  cv::VideoCapture cap(dir.file("out.mp4"));  // annotated video: same size, every frame
  ASSERT_TRUE(cap.isOpened());
  EXPECT_EQ(static_cast<int>(cap.get(cv::CAP_PROP_FRAME_WIDTH)), 640);
  EXPECT_EQ(static_cast<int>(cap.get(cv::CAP_PROP_FRAME_HEIGHT)), 360);
  EXPECT_NEAR(cap.get(cv::CAP_PROP_FPS), 30.0, 0.01);
  int n = 0;
  cv::Mat f;
  while (cap.read(f)) ++n;
  EXPECT_EQ(n, 60);

  auto profile = nlohmann::json::parse(test::read_file(dir.file("profile.json")));
  EXPECT_EQ(profile["frames"], 60);
  EXPECT_GT(profile["inference_fps"].get<double>(), 0.0);
  std::set<std::string> stages;
  for (auto& s : profile["stages"]) stages.insert(s["stage"].get<std::string>());
  for (const char* s : {"read", "preprocess", "inference", "postprocess", "draw", "write"}) EXPECT_TRUE(stages.count(s)) << s;
}

TEST(Cli, CorruptFrameIsSkippedCountedAndTheRunGoesOn) {
  test::TempDir dir;
  test::write_numbered_avi(dir.file("a.avi"), 20);
  test::corrupt_mjpeg_frame(dir.file("a.avi"), 7);
  CliResult r = run_cli(dir, {"run", "-m", kTinyModel, "-s", dir.file("a.avi"), "-d", dir.file("d.jsonl"),
                              "--profile-json", dir.file("p.json"), "-q"});
  // The run goes on and its outputs are complete; the exit code says the source was damaged.
  ASSERT_EQ(r.code, exit_code::kDamagedSource) << r.err;
  EXPECT_NE(last_line(r.err).find("a.avi is damaged: 19 frames decoded of 20 declared, 1 could not be decoded"), std::string::npos)
      << r.err;
  auto profile = nlohmann::json::parse(test::read_file(dir.file("p.json")));
  EXPECT_EQ(profile["corrupt_frames"], 1);
  EXPECT_EQ(profile["frames"], 19);
  EXPECT_EQ(test::count_lines(dir.file("d.jsonl")), 19u);
}

struct ErrorCase {
  const char* name;
  std::vector<std::string> args;  // {model} {dir} are replaced
  int code;
  const char* message_mentions;   // the thing the one-line message must name
};

TEST(Cli, EachBadInputGetsItsExitCodeAndAOneLineMessage) {
  test::TempDir dir;
  test::write_numbered_avi(dir.file("a.avi"), 3);
  { std::ofstream(dir.file("garbage.onnx")) << "this is not a protobuf"; }
  const std::string clip = dir.file("a.avi");
  std::vector<ErrorCase> cases = {
      {"missing model", {"run", "-m", dir.file("nope.onnx"), "-s", clip}, exit_code::kModel, "nope.onnx"},
      {"garbage model", {"run", "-m", dir.file("garbage.onnx"), "-s", clip}, exit_code::kModel, "garbage.onnx"},
      {"wrong layout for the model", {"run", "-m", kTinyModel, "-s", clip, "--layout", "ssd"}, exit_code::kModel, "ssd"},
      {"unknown layout name", {"run", "-m", kTinyModel, "-s", clip, "--layout", "yolov99"}, exit_code::kUsage, "yolov99"},
      {"missing source", {"run", "-m", kTinyModel, "-s", dir.file("missing.mp4")}, exit_code::kSource, "missing.mp4"},
      {"unwritable video", {"run", "-m", kTinyModel, "-s", clip, "-o", "/nonexistent/dir/out.mp4"}, exit_code::kOutput, "/nonexistent/dir/out.mp4"},
      {"unwritable detections", {"run", "-m", kTinyModel, "-s", clip, "-d", "/nonexistent/d.jsonl"}, exit_code::kOutput, "/nonexistent/d.jsonl"},
      {"bad option value", {"run", "-m", kTinyModel, "-s", clip, "--conf", "7"}, exit_code::kUsage, "--conf"},
      {"unknown engine", {"run", "-m", kTinyModel, "-s", clip, "--engine", "tensorrt"}, exit_code::kUsage, "tensorrt"},
  };
  for (const auto& c : cases) {
    CliResult r = run_cli(dir, c.args);
    EXPECT_EQ(r.code, c.code) << c.name << ": " << r.err;
    std::string line = last_line(r.err);
    EXPECT_NE(line.find(c.message_mentions), std::string::npos) << c.name << ": " << r.err;
    EXPECT_EQ(r.err.find("terminate called"), std::string::npos) << c.name;
  }
}

TEST(Cli, CtrlCExitsWith130AndKeepsCompleteOutputs) {
  test::TempDir dir;
  // An endless live camera: only Ctrl-C ends this run.
  Process p = spawn_streamdet({"run", "-m", kTinyModel, "-s", "synth:w=320,h=192,fps=60,frames=0,live=1", "-o",
                               dir.file("out.mp4"), "-d", dir.file("d.jsonl"), "-q"},
                              dir.file("stderr.txt"));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (test::count_lines(dir.file("d.jsonl")) < 10 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_GE(test::count_lines(dir.file("d.jsonl")), 10u) << test::read_file(dir.file("stderr.txt"));
  kill(p.pid, SIGINT);
  int code = wait_exit_code(p);
  EXPECT_EQ(code, exit_code::kInterrupted) << test::read_file(dir.file("stderr.txt"));
  std::ifstream in(dir.file("d.jsonl"));
  std::string line;
  int64_t lines = 0, last_frame = -1;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);  // no torn line
    EXPECT_GT(j["frame"].get<int64_t>(), last_frame);
    last_frame = j["frame"];
    ++lines;
  }
  cv::VideoCapture cap(dir.file("out.mp4"));  // finalized: readable, one frame per line
  ASSERT_TRUE(cap.isOpened());
  int n = 0;
  cv::Mat f;
  while (cap.read(f)) ++n;
  EXPECT_EQ(n, lines);
}

// `streamdet bench --json` with a sweep and a source: one JSON object per combination, each with
// the documented keys, engine and end-to-end figures that make sense.
TEST(Cli, BenchJsonSweepPrintsOneRowPerCombinationWithTheDocumentedKeys) {
  test::TempDir dir;
  Process p = spawn_streamdet({"bench", "-m", kTinyModel, "-s", "synth:w=320,h=192,frames=24", "--warmup", "1", "-n",
                               "4", "-d", dir.file("d.jsonl"), "--json", "--sweep", "workers=1,2", "threads=1,2"},
                              dir.file("stderr.txt"), {.stdout_path = dir.file("stdout.txt")});
  ASSERT_EQ(wait_exit_code(p), 0) << test::read_file(dir.file("stderr.txt"));
  std::ifstream in(dir.file("stdout.txt"));
  std::string line;
  std::set<std::pair<int, int>> combos;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    for (const char* key : {"model", "engine", "device", "threads", "workers", "batch", "input_size", "engine_latency_ms",
                            "engine_fps", "load_ms", "e2e_fps", "e2e_latency_ms", "commit"})
      EXPECT_TRUE(j.contains(key)) << key << " missing in " << line;
    for (const char* q : {"min", "median", "p90", "p99"}) EXPECT_TRUE(j["engine_latency_ms"].contains(q)) << q;
    for (const char* q : {"median", "p90", "p99"}) EXPECT_TRUE(j["e2e_latency_ms"].contains(q)) << q;
    EXPECT_EQ(j["engine"], "native");
    EXPECT_EQ(j["input_size"], "256x256");  // the bundled model has a fixed input size
    EXPECT_LE(j["engine_latency_ms"]["min"].get<double>(), j["engine_latency_ms"]["median"].get<double>());
    EXPECT_LE(j["engine_latency_ms"]["median"].get<double>(), j["engine_latency_ms"]["p99"].get<double>());
    EXPECT_GT(j["engine_fps"].get<double>(), 0);
    EXPECT_GT(j["e2e_fps"].get<double>(), 0);
    combos.insert({j["workers"].get<int>(), j["threads"].get<int>()});
  }
  EXPECT_EQ(combos, (std::set<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {2, 2}}));
  EXPECT_EQ(test::count_lines(dir.file("d.jsonl")), 24u);  // the last row's pipeline run wrote every frame
}

// A sweep with a combination the model cannot run (batch 4 on a fixed-batch model) is refused
// before any row is measured (exit 2, nothing on stdout), naming the row; it used to measure the
// batch-1 rows first and then fail, losing them.
TEST(Cli, BenchSweepRefusesAnImpossibleRowBeforeMeasuringAny) {
  test::TempDir dir;
  Process p = spawn_streamdet({"bench", "-m", kTinyModel, "-s", "synth:w=320,h=192,frames=12", "--warmup", "1", "-n", "3",
                               "--json", "--sweep", "workers=1,2", "batch=1,4"},
                              dir.file("stderr.txt"), {.stdout_path = dir.file("stdout.txt")});
  EXPECT_EQ(wait_exit_code(p), 2);
  EXPECT_EQ(test::read_file(dir.file("stdout.txt")), "");
  const std::string err = test::read_file(dir.file("stderr.txt"));
  EXPECT_EQ(test::nonempty_lines(err).size(), 1u) << err;
  EXPECT_NE(err.find("batch=4"), std::string::npos) << err;
  EXPECT_NE(err.find("fixed batch size of 1"), std::string::npos) << err;
}

// The README's batching and sweep examples run as written with the shipped dynamic-axes model.
TEST(Cli, ReadmeBatchAndSweepExamplesRunWithTheDynamicModel) {
  test::TempDir dir;
  Process run = spawn_streamdet({"run", "-m", kTinyDynamicModel, "-s", "synth:w=320,h=192,frames=20,seed=3", "-s",
                                 "synth:w=320,h=192,frames=20,seed=4", "--workers", "2", "--batch", "4", "--input-size",
                                 "256", "-o", dir.file("out_{name}.mp4"), "-d", dir.file("d.jsonl"), "-q"},
                                dir.file("stderr.txt"));
  ASSERT_EQ(wait_exit_code(run), 0) << test::read_file(dir.file("stderr.txt"));
  EXPECT_EQ(test::count_lines(dir.file("d.jsonl")), 40u);
  int videos = 0;
  for (const auto& name : test::list_dir(dir.path()))
    if (name.rfind("out_", 0) == 0 && name.size() > 4 && name.substr(name.size() - 4) == ".mp4") ++videos;
  EXPECT_EQ(videos, 2);

  Process bench = spawn_streamdet({"bench", "-m", kTinyDynamicModel, "-s", "synth:w=320,h=192,frames=8", "--warmup", "1",
                                   "-n", "2", "--json", "--sweep", "batch=1,4", "input-size=256,auto"},
                                  dir.file("stderr.txt"), {.stdout_path = dir.file("stdout.txt")});
  ASSERT_EQ(wait_exit_code(bench), 0) << test::read_file(dir.file("stderr.txt"));
  std::set<std::pair<int, std::string>> rows;
  std::ifstream in(dir.file("stdout.txt"));
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    rows.insert({j["batch"].get<int>(), j["input_size"].get<std::string>()});
  }
  // auto: the 320x192 frames rounded up to the stride 32.
  EXPECT_EQ(rows, (std::set<std::pair<int, std::string>>{{1, "256x256"}, {1, "320x192"}, {4, "256x256"}, {4, "320x192"}}));
}

// The dynamic-axes model is the bundled model re-exported (tools/make_dynamic_model.py): at the
// same input size it finds the same objects, boxes and confidences.
TEST(Cli, DynamicModelDetectsWhatTheFixedModelDoes) {
  test::TempDir dir;
  for (const auto& [model, out] : {std::pair{kTinyModel, "fixed.jsonl"}, std::pair{kTinyDynamicModel, "dynamic.jsonl"}}) {
    Process p = spawn_streamdet({"run", "-m", model, "-s", "synth:w=320,h=192,frames=10,seed=5", "--workers", "1",
                                 "--input-size", "256", "-d", dir.file(out), "-q"},
                                dir.file("stderr.txt"));
    ASSERT_EQ(wait_exit_code(p), 0) << test::read_file(dir.file("stderr.txt"));
  }
  std::ifstream fixed(dir.file("fixed.jsonl")), dynamic(dir.file("dynamic.jsonl"));
  std::string a, b;
  int frames = 0, boxes = 0;
  while (std::getline(fixed, a)) {
    ASSERT_TRUE(std::getline(dynamic, b));
    auto ja = nlohmann::json::parse(a), jb = nlohmann::json::parse(b);
    ASSERT_EQ(ja["frame"], jb["frame"]);
    ASSERT_EQ(ja["detections"].size(), jb["detections"].size()) << a << "\n" << b;
    for (size_t i = 0; i < ja["detections"].size(); ++i) {
      const auto &da = ja["detections"][i], &db = jb["detections"][i];
      EXPECT_EQ(da["class_id"], db["class_id"]);
      EXPECT_NEAR(da["confidence"].get<double>(), db["confidence"].get<double>(), 1e-3);
      for (int k = 0; k < 4; ++k) EXPECT_NEAR(da["box"][k].get<double>(), db["box"][k].get<double>(), 0.05);
      ++boxes;
    }
    ++frames;
  }
  EXPECT_FALSE(std::getline(dynamic, b));
  EXPECT_EQ(frames, 10);
  EXPECT_GT(boxes, 10);  // the synthetic scenes hold several objects a frame
}

// bench measures what run does: without --workers/--threads it uses run's default worker plan,
// and its ratio is end-to-end against the engine alone with that plan.
TEST(Cli, BenchDefaultsAreRunsWorkerPlan) {
  test::TempDir dir;
  Process p = spawn_streamdet({"bench", "-m", kTinyModel, "-s", "synth:w=320,h=192,frames=12", "--warmup", "1", "-n", "3", "--json"},
                              dir.file("stderr.txt"), {.stdout_path = dir.file("stdout.txt")});
  ASSERT_EQ(wait_exit_code(p), 0) << test::read_file(dir.file("stderr.txt"));
  auto j = nlohmann::json::parse(test::read_file(dir.file("stdout.txt")));
  const int cores = std::max(1, cpu_count());
  const WorkerPlan plan = plan_workers(0, 0, cores, "native", false);
  EXPECT_EQ(j["workers"].get<int>(), plan.workers);
  EXPECT_EQ(j["threads"].get<int>(), plan.workers * plan.threads_per_worker);
  EXPECT_NEAR(j["e2e_over_engine"].get<double>(), j["e2e_fps"].get<double>() / j["engine_fps"].get<double>(), 1e-9);
  EXPECT_GT(j["inference_ms_in_pipeline"].get<double>(), 0);
}

// One name per concept: --frames everywhere, --max-frames kept as an alias.
// --track: by default a video's detections carry stable track ids (the same object, the same id
// from frame to frame), images' none; off turns it off; the detections written are those at
// --conf or above either way (the tracker's low round sees more, the outputs do not).
TEST(Cli, TrackingGivesAVideosObjectsStableIdsByDefault) {
  test::TempDir dir;
  auto run = [&](const std::vector<std::string>& extra, const std::string& out) {
    std::vector<std::string> args{"run", "-m", kTinyModel, "-s", "synth:w=320,h=192,frames=40,seed=11", "-d", dir.file(out), "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    Process p = spawn_streamdet(args, dir.file("stderr.txt"));
    EXPECT_EQ(wait_exit_code(p), 0) << test::read_file(dir.file("stderr.txt"));
  };
  run({}, "tracked.jsonl");
  run({"--track", "off"}, "plain.jsonl");
  std::ifstream tracked(dir.file("tracked.jsonl")), plain(dir.file("plain.jsonl"));
  std::string a, b;
  int with_id = 0, total = 0;
  std::set<int64_t> ids;
  while (std::getline(tracked, a)) {
    ASSERT_TRUE(std::getline(plain, b));
    auto ja = nlohmann::json::parse(a), jb = nlohmann::json::parse(b);
    ASSERT_EQ(ja["detections"].size(), jb["detections"].size()) << "frame " << ja["frame"];
    for (size_t i = 0; i < ja["detections"].size(); ++i) {
      EXPECT_FALSE(jb["detections"][i].contains("track_id"));
      EXPECT_GE(ja["detections"][i]["confidence"].get<double>(), 0.25);
      ++total;
      if (ja["detections"][i].contains("track_id")) {
        ++with_id;
        ids.insert(ja["detections"][i]["track_id"].get<int64_t>());
      }
    }
  }
  EXPECT_GT(total, 100);
  EXPECT_GT(with_id, total * 9 / 10);  // all but a newcomer's first frame
  // The synthetic scene holds a handful of objects for the whole clip: a handful of ids, not one
  // per detection.
  EXPECT_LE(ids.size(), 12u);
  EXPECT_GE(ids.size(), 3u);
}

TEST(Cli, TrackingOptionsAreCheckedBeforeAnythingRuns) {
  test::TempDir dir;
  const std::string out = dir.file("d.jsonl");
  for (const auto& [args, message] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--track", "sort"}, "unknown --track 'sort' (auto|bytetrack|iou|off)"},
           {{"--track-low", "0.6", "--track-thresh", "0.5"}, "--track-low 0.6 is above --track-thresh 0.5"},
           {{"--track-thresh", "nan"}, "--track-thresh"},
           {{"--track-buffer", "-1"}, "--track-buffer"},
           {{"--track-appearance", "maybe"}, "unknown --track-appearance 'maybe' (on|off)"},
           {{"--track-partial-box", "1.5"}, "--track-partial-box: must be a number in [0, 1], got 1.5"}}) {
    std::vector<std::string> full{"run", "-m", kTinyModel, "-s", "synth:w=320,h=192,frames=5", "-d", out};
    full.insert(full.end(), args.begin(), args.end());
    auto r = run_cli(dir, full);
    EXPECT_EQ(r.code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(test::nonempty_lines(r.err).size(), 1u) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << args[0];
  }
}

TEST(Cli, FramesAndMaxFramesAreOneOption) {
  test::TempDir dir;
  for (const char* name : {"--frames", "--max-frames"}) {
    const std::string out = dir.file(std::string("d") + name + ".jsonl");
    Process p = spawn_streamdet({"run", "-m", kTinyModel, "-s", "synth:w=320,h=192,frames=30", name, "7", "-d", out, "-q"},
                                dir.file("stderr.txt"));
    ASSERT_EQ(wait_exit_code(p), 0) << name << ": " << test::read_file(dir.file("stderr.txt"));
    EXPECT_EQ(test::count_lines(out), 7u) << name;
  }
}

TEST(Cli, ModelInfoShowsWhereEachNodeRunsAndTheCopies) {
  test::TempDir dir;
  Process p = spawn_streamdet({"model-info", "-m", kTinyModel, "--steps"}, dir.file("stderr.txt"), {.stdout_path = dir.file("out.txt")});
  ASSERT_EQ(wait_exit_code(p), 0) << test::read_file(dir.file("stderr.txt"));
  const std::string out = test::read_file(dir.file("out.txt"));
  EXPECT_NE(out.find("input     images [1, 3, 256, 256]"), std::string::npos) << out;
  EXPECT_NE(out.find("plan      for [1, 3, 256, 256]: "), std::string::npos) << out;
  EXPECT_NE(out.find(" 0 copies between backends per run"), std::string::npos) << out;
  EXPECT_NE(out.find("NHWC float32"), std::string::npos) << out;
  EXPECT_NE(out.find("oneDNN"), std::string::npos) << out;
  EXPECT_NE(out.find("[streamdet:stem_direct]"), std::string::npos) << out;  // the image layer's own kernel
  // Every step is listed on the CPU, as many as the backend row counts.
  const auto row = out.find("\ncpu   ");
  ASSERT_NE(row, std::string::npos) << out;
  const int steps = std::stoi(out.substr(row + 6, 12));
  int listed = 0;
  for (size_t at = out.find("  cpu    "); at != std::string::npos; at = out.find("  cpu    ", at + 1)) ++listed;
  EXPECT_EQ(listed, steps);
  EXPECT_GT(steps, 50);

  CliResult bad = run_cli(dir, {"model-info", "-m", dir.file("missing.onnx")});
  EXPECT_EQ(bad.code, exit_code::kModel);
  EXPECT_NE(test::last_line(bad.err).find("missing.onnx"), std::string::npos) << bad.err;
}

// --cuda-graphs on|off (run, bench, model-info): model-info says whether the GPU's steps are
// replayed as a CUDA graph or why not; on the CPU alone there is none.
TEST(Cli, ModelInfoSaysWhetherTheGpuStepsAreReplayedAsAGraph) {
  test::TempDir dir;
  auto model_info = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"model-info", "-m", kTinyModel, "--device", "cpu"};
    args.insert(args.end(), extra.begin(), extra.end());
    Process p = spawn_streamdet(args, dir.file("stderr.txt"), {.stdout_path = dir.file("out.txt")});
    EXPECT_EQ(wait_exit_code(p), 0) << test::read_file(dir.file("stderr.txt"));
    return test::read_file(dir.file("out.txt"));
  };
  const std::string on = model_info({});
  EXPECT_NE(on.find("\ngraph     none: no step runs on a device\n"), std::string::npos) << on;
  const std::string off = model_info({"--cuda-graphs", "off"});
  EXPECT_NE(off.find("\ngraph     off\n"), std::string::npos) << off;
  CliResult run = run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=320,h=192,frames=3", "--device", "cpu", "--cuda-graphs", "off", "-q"});
  EXPECT_EQ(run.code, 0) << run.err;
  CliResult bad = run_cli(dir, {"model-info", "-m", kTinyModel, "--cuda-graphs", "maybe"});
  EXPECT_EQ(bad.code, exit_code::kUsage);
  EXPECT_NE(bad.err.find("--cuda-graphs"), std::string::npos) << bad.err;
}

TEST(Cli, ADeviceThatIsNotThereIsOneLineAndExit3) {
  if (native::cuda_backend(0)) GTEST_SKIP() << "a GPU is present here";
  test::TempDir dir;
  for (const char* device : {"cuda", "cuda:0", "cuda:3"}) {
    CliResult r = run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=64,h=64,frames=2", "--device", device, "-q"});
    EXPECT_EQ(r.code, exit_code::kModel) << device << ": " << r.err;
    EXPECT_EQ(test::nonempty_lines(r.err).size(), 1u) << r.err;
    // "--device cuda: CUDA: no NVIDIA driver, ..." (or, built without the toolkit, "... without CUDA ...").
    EXPECT_NE(test::last_line(r.err).find(std::string("--device ") + device + ": "), std::string::npos) << r.err;
    EXPECT_NE(test::last_line(r.err).find("CUDA"), std::string::npos) << r.err;
  }
  CliResult bad = run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=64,h=64,frames=2", "--device", "gpu", "-q"});
  EXPECT_EQ(bad.code, exit_code::kUsage) << bad.err;
  // auto falls back to the CPU, and says nothing about it.
  CliResult cpu = run_cli(dir, {"run", "-m", kTinyModel, "-s", "synth:w=64,h=64,frames=2", "--device", "auto", "-q"});
  EXPECT_EQ(cpu.code, 0) << cpu.err;
  EXPECT_TRUE(test::nonempty_lines(cpu.err).empty()) << cpu.err;
}

}  // namespace
}  // namespace sd
