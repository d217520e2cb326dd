#include "app/cli.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/bench_command.h"
#include "app/model_info_command.h"
#include "app/publish_command.h"
#include "app/quantize_command.h"
#include "app/val_command.h"
#include "app/option_checks.h"
#include "core/build_info.h"
#include "engine/native/backend.h"
#include "engine/native/cuda/cuda_backend.h"
#include "core/memory_budget.h"
#include "runtime/worker_plan.h"
#include "core/error.h"
#include "core/log.h"
#include "runtime/interrupt.h"
#include "runtime/pipeline.h"
#include "runtime/tracking.h"

namespace sd {

namespace {

// Options shared by `run` and `bench`: which model, how to feed it, how to decode it.
void add_model_options(CLI::App& cmd, ModelOptions& m, std::string& layout) {
  cmd.add_option("-m,--model", m.model, "ONNX model (.onnx) or Darknet config (.cfg; its .weights beside it)")
      ->required();
  cmd.add_option("--weights", m.weights, "Darknet .weights file (default: the .cfg's name with .weights)");
  cmd.add_option("--engine", m.engine,
                 "inference engine: auto (native for ONNX, opencv for Darknet), native (streamdet's own ONNX engine on oneDNN), "
                 "opencv (OpenCV DNN)")
      ->capture_default_str();
  cmd.add_option("--device", m.device,
                 "where the native engine runs: auto (a CUDA GPU when one is usable, else the CPU), cpu, cuda, cuda:N; "
                 "nodes the GPU does not run stay on the CPU")
      ->capture_default_str();
  cmd.add_option("--threads", m.threads, "inference threads in all, divided among the workers (0: every core)")->check(integer_in(0, kMaxThreads));
  cmd.add_option("--input-size", m.input_size,
                 "network input: auto (dynamic models: the frame size rounded up to the stride, e.g. 1280x720 -> "
                 "1280x736; fixed models: their size), W,H, or N for NxN")
      ->capture_default_str();
  cmd.add_option("--layout", layout, "output layout: auto|yolov8|yolov5|yolov10|yolox|ssd|darknet")
      ->capture_default_str();
  cmd.add_option("--preprocess", m.preprocess,
                 "override preprocessing, comma-separated: rgb|bgr, letterbox|stretch, center|topleft, scale=F "
                 "(or 1/255), pad=N, mean=a:b:c, std=a:b:c")
      ->check(preprocess_overrides());
  cmd.add_option("--classes", m.classes_file, "class names file, one per line (default: model metadata, or COCO for 80 classes)");
  cmd.add_option("--conf", m.conf, "confidence threshold")->capture_default_str()->check(real_in(0, 1));
  cmd.add_option("--iou", m.iou, "NMS IoU threshold (boxes overlapping more are suppressed)")
      ->capture_default_str()
      ->check(real_in(0, 1, Interval::kOpenLow));
  cmd.add_option_function<std::string>(
         "--max-memory", [&m](const std::string& text) { m.max_memory_bytes = parse_memory_size(text).value_or(0); },
         "memory the run may take (the model at its input size, frames and tensors in flight), e.g. 8G or 512M; a run "
         "that would need more is refused before it allocates (default: 80% of physical memory)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return parse_memory_size(text) ? std::string() : "must be a size with a unit, like 8G or 512M, got " + text;
          },
          "SIZE"));
  cmd.add_option("--engine-profile", m.engine_profile_rows,
                 "native engine: print each worker's time per node at exit, the N slowest (0: every node), and per op type")
      ->expected(0, 1)
      ->default_str("25")
      ->check(integer_in(0, 100000));
  cmd.add_flag("--agnostic", m.agnostic, "class-agnostic NMS (boxes of different classes suppress each other)");
  cmd.add_option("--max-det", m.max_det, "maximum detections per frame")->capture_default_str()->check(integer_in(1, 100000));
}

// Options of the pipelined runtime (threads, batching, frame policies, trace, live view).
void add_runtime_options(CLI::App& cmd, RunOptions& r, std::string& policy) {
  cmd.add_option("--workers", r.workers,
                 "inference workers, each with its own execution context (--threads are divided among them); 0: auto (on the "
                 "native CPU engine, up to 4 workers for files, one for live sources)")
      ->capture_default_str()
      ->check(integer_in(0, kMaxWorkers));
  cmd.add_option("--decode-threads", r.decode_threads,
                 "threads of each video file's decoder (0: the cores the inference threads leave free, at least 1)")
      ->capture_default_str()
      ->check(integer_in(0, 64));
  cmd.add_option("--batch", r.batch, "frames per inference call (micro-batching, across sources too)")
      ->capture_default_str()
      ->check(integer_in(1, kMaxBatch));
  cmd.add_option("--batch-wait", r.batch_wait_ms, "ms a worker waits for a batch to fill")
      ->capture_default_str()
      ->check(real_in(0, 10000, Interval::kClosed, "ms"));
  cmd.add_option("--policy", policy,
                 "what happens to frames the pipeline cannot take yet: auto (block for files, latest for live sources), "
                 "block, latest (always infer the newest frame, drop older ones), drop-oldest")
      ->capture_default_str();
  cmd.add_option("--queue", r.queue, "queue length for --policy drop-oldest")->capture_default_str()->check(integer_in(1, 4096));
  cmd.add_option("--every", r.every, "infer every Nth frame only (the others are dropped and counted)")
      ->capture_default_str()
      ->check(integer_in(1, 1000000));
  cmd.add_option("--max-age", r.max_age_ms,
                 "drop frames older than this many ms when a worker takes them (0: off); Redis entries this old are "
                 "acknowledged unread")
      ->capture_default_str()
      ->check(real_in(0, 3600000, Interval::kClosed, "ms"));
  cmd.add_option("--claim-after", r.claim_after_ms,
                 "Redis sources: claim entries left pending this many ms on another consumer (a dead worker's)")
      ->capture_default_str()
      ->check(integer_in(1, INT64_MAX, "ms"));
  cmd.add_option("--max-pixels", r.max_pixels, "Redis sources: refuse frames with more pixels than this (to the dead-letter stream)")
      ->capture_default_str()
      ->check(integer_in(1, INT64_MAX));
  cmd.add_option("--trace", r.trace, "write a Chrome trace-event file (open in Perfetto or chrome://tracing)");
  cmd.add_flag("--show", r.show, "show every captured frame with the latest detections in a window; q quits");
  cmd.add_option("--serve", r.serve,
                 "serve a live web view of the annotated streams and figures, Prometheus /metrics and /health at "
                 "[host:]port while the run goes (host 127.0.0.1 unless given; port 0: any free port); see docs/observe.md");
  cmd.add_option("--serve-fps", r.serve_fps, "frames per second per source sent to the web view, at most")
      ->capture_default_str()
      ->check(real_in(0.1, 120, Interval::kClosed, "fps"));
  cmd.add_option("--serve-token", r.serve_token,
                 "a secret every --serve endpoint then needs (Authorization: Bearer TOKEN, or ?token=TOKEN in the page's URL)");
}

// `run` only: how long a stop request (Ctrl-C, SIGTERM) may take.
void add_stop_options(CLI::App& cmd, double& drain_timeout_s) {
  cmd.add_option("--drain-timeout", drain_timeout_s,
                 "after Ctrl-C or SIGTERM, finish the frames in flight for at most this many seconds, then drop the "
                 "rest (a Redis source leaves their entries pending for another worker); 0: stop at once")
      ->capture_default_str()
      ->check(real_in(0, 3600, Interval::kClosed, "seconds"));
}

// `run` only: what happens when a live source goes down.
void add_live_source_options(CLI::App& cmd, RunOptions& r, std::string& reconnect, double& stall_s, double& reconnect_for_s) {
  cmd.add_option("--reconnect", reconnect,
                 "live sources (streams, cameras, live GStreamer pipelines) that stall, break or end: auto (reconnect "
                 "with back-off), never (the first outage ends the run)")
      ->capture_default_str();
  cmd.add_option("--stall-timeout", stall_s, "seconds without a frame after which a live source is down")
      ->capture_default_str()
      ->check(real_in(0.1, 3600, Interval::kClosed, "seconds"));
  cmd.add_option("--reconnect-for", reconnect_for_s, "give up on a live source after it has been down this many seconds (0: never)")
      ->capture_default_str()
      ->check(real_in(0, 31536000, Interval::kClosed, "seconds"));
}

// `run` only: object identities (track/byte_tracker.h), with ByteTrack's parameters as its users
// know them (Ultralytics' bytetrack.yaml names).
struct TrackFlags {
  std::string mode = "auto";
  CLI::Option* new_track = nullptr;
  std::vector<std::string> lines, zones;  // --line, --zone as given (analytics/place_specs.h)
};

void add_tracking_options(CLI::App& cmd, RunOptions& r, TrackFlags& flags) {
  track::TrackerOptions& t = r.tracker;
  cmd.add_option("--track", flags.mode,
                 "object identities: auto (ByteTrack for video, cameras and streams; off for images and Redis sources), "
                 "bytetrack, iou (no motion model), off")
      ->capture_default_str();
  cmd.add_option("--track-thresh", t.track_thresh, "detections this confident are matched first and can start tracks")
      ->capture_default_str()
      ->check(real_in(0, 1, Interval::kOpenLow));
  cmd.add_option("--track-low", t.low_thresh,
                 "detections down to this confidence keep a track alive in the second round (and are not written)")
      ->capture_default_str()
      ->check(real_in(0, 1, Interval::kOpenLow));
  flags.new_track = cmd.add_option("--new-track-thresh", t.new_track_thresh,
                                   "a detection no track took starts a new one from this confidence (default: --track-thresh + 0.1)")
                        ->check(real_in(0, 1, Interval::kOpenLow));
  cmd.add_option("--match-thresh", t.match_thresh, "first round: a track and a detection match when 1 - IoU x confidence is under this")
      ->capture_default_str()
      ->check(real_in(0, 1, Interval::kOpenLow));
  cmd.add_option("--track-buffer", t.track_buffer, "frames (at 30 fps) a lost track is kept: 30 is one second")
      ->capture_default_str()
      ->check(real_in(0, 1e6, Interval::kClosed, "frames"));
  cmd.add_flag("--track-agnostic", t.class_agnostic, "a track may take detections of any class (default: its own class only)");
  cmd.add_option("--line", flags.lines,
                 "[SOURCE/]NAME:x1,y1,x2,y2: count tracks crossing this line, 'in' from its left to its right going "
                 "from point 1 to point 2 (pixels, or fractions of the frame: 0.5,0,0.5,1); repeatable");
  cmd.add_option("--zone", flags.zones,
                 "[SOURCE/]NAME:x1,y1,x2,y2,x3,y3,...: a polygon; count tracks entering and leaving it, those inside, "
                 "their dwell time; repeatable");
  cmd.add_option("--events", r.events, "line crossings and zone entries and exits as JSON Lines; - for standard output");
}

Status resolve_tracking(const TrackFlags& flags, RunOptions& r) {
  bool known = false;
  for (TrackMode m : {TrackMode::kAuto, TrackMode::kByteTrack, TrackMode::kIou, TrackMode::kOff})
    if (flags.mode == track_mode_name(m)) {
      r.track = m;
      known = true;
    }
  if (!known) return fail(ErrorCode::kUsage, "unknown --track '" + flags.mode + "' (auto|bytetrack|iou|off)");
  track::TrackerOptions& t = r.tracker;
  if (t.low_thresh > t.track_thresh)
  {
    char line[160];
    std::snprintf(line, sizeof line, "--track-low %g is above --track-thresh %g (the second round takes the detections under it)",
                  t.low_thresh, t.track_thresh);
    return fail(ErrorCode::kUsage, line);
  }
  if (flags.new_track->count() == 0) t.new_track_thresh = std::min(1.0, t.track_thresh + 0.1);
  for (bool zone : {false, true})
    for (const std::string& text : zone ? flags.zones : flags.lines) {
      SD_ASSIGN_OR_RETURN(PlaceSpec spec, parse_place_spec(zone, text));
      if (r.track == TrackMode::kOff) return fail(ErrorCode::kUsage, spec.given + ": lines and zones count tracks, and --track is off");
      r.places.push_back(std::move(spec));
    }
  if (!r.events.empty() && r.places.empty()) return fail(ErrorCode::kUsage, "--events " + r.events + ": no --line or --zone to report");
  return ok();
}

Status resolve_policy(const std::string& text, RunOptions& r) {
  for (FramePolicy p : {FramePolicy::kAuto, FramePolicy::kBlock, FramePolicy::kLatest, FramePolicy::kDropOldest})
    if (text == frame_policy_name(p)) {
      r.policy = p;
      return ok();
    }
  return fail(ErrorCode::kUsage, "unknown --policy '" + text + "' (auto|block|latest|drop-oldest)");
}

Status resolve_layout(const std::string& text, ModelOptions& m) {
  auto layout = parse_layout(text);
  if (!layout) return fail(ErrorCode::kUsage, "unknown --layout '" + text + "' (auto|yolov8|yolov5|yolov10|yolox|ssd|darknet)");
  m.layout = *layout;
  return ok();
}

// REDISCLI_AUTH, as redis-cli reads it: a password kept out of the command line (and so out of
// `ps`), for redis:// URIs that carry none. A credential, not a switch.
std::optional<std::string> redis_password_from_environment() {
  const char* password = std::getenv("REDISCLI_AUTH");
  if (!password || !*password) return std::nullopt;
  return std::string(password);
}

int report_error(const Error& e) {
  log_error("%s", e.message.c_str());
  return exit_code_for(e.code);
}

int run_command(RunOptions& options, const std::string& layout) {
  set_log_quiet(options.quiet);
  set_log_verbose(options.verbose);
  if (auto st = resolve_layout(layout, options.model); !st) return report_error(st.error());
  options.redis_password = redis_password_from_environment();
  install_interrupt_handler();
  RunOutcome outcome = run_detection(options);
  if (outcome.started && !options.quiet) std::fprintf(stderr, "%s", format_profile(outcome.profile).c_str());
  if (!outcome.status && outcome.status.error().code == ErrorCode::kDamagedSource) {
    // The run finished and its outputs are complete: a warning, with its own exit code.
    log_warn("%s", outcome.status.error().message.c_str());
    return exit_code::kDamagedSource;
  }
  if (!outcome.status) return report_error(outcome.status.error());
  return exit_code::kOk;
}

}  // namespace

// --version: the build, and the backends it can run on here.
std::string version_text() {
  std::string text = std::string("streamdet ") + STREAMDET_VERSION + " (commit " + build_commit() + ")\n";
  text += "cpu: " + native::cpu_backend()->description() + "\n";
  const native::CudaInfo cuda = native::cuda_info();
  if (!cuda.built) return text + "cuda: not built (no CUDA toolkit when streamdet was built): CPU only";
  text += "cuda: built with CUDA runtime " + cuda.runtime + (cuda.driver.empty() ? ", no driver" : ", driver CUDA " + cuda.driver);
  for (const auto& d : cuda.devices) text += "\n  " + d;
  if (!cuda.problem.empty()) text += "\n  " + cuda.problem + ": the GPU backend is not used";
  return text;
}

int cli_main(int argc, char** argv) {
  CLI::App app{"streamdet: real-time object detection for video, with the profile built in"};
  app.set_version_flag("--version", version_text);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok, 1 internal error, 2 usage, 3 model, 4 source, 5 output, 6 unsupported, 7 damaged source,\n"
      "130 interrupted; docs/errors.md explains each and what is kept when a run fails.\n"
      "Run 'streamdet <command> --help' for a command's options.");

  RunOptions run;
  std::string run_layout = "auto";
  std::string run_policy = "auto";
  CLI::App* run_cmd = app.add_subcommand("run", "detect objects in a source; write annotated video, JSONL and a profile");
  add_model_options(*run_cmd, run.model, run_layout);
  run_cmd->add_option("-s,--source", run.sources,
                      "video file, image file/folder/glob, camera (0, /dev/video0), GStreamer pipeline ending in "
                      "appsink, rtsp://... / http://... URL, or synth:key=value,... (a synthetic scene; see README); repeat for several sources in one process")
      ->required()
      ->take_all();
  run_cmd->add_option("-o,--output", run.output,
                      "annotated video to write (.mp4, .avi, .mkv; - for Matroska on standard output); with several "
                      "sources {i} or {name} in the name, else _<i> is added");
  run_cmd->add_option("-d,--detections", run.detections,
                      "detections as JSON Lines, one line per frame (all sources); - for standard output");
  run_cmd->add_option("--sink", run.sinks,
                      "another output, its kind from its name: a video file, a .jsonl file, or "
                      "redis://[user:pass@]host:port/STREAM (detections into a Redis stream); repeat for several")
      ->take_all();
  run_cmd->add_option("--profile-json", run.profile_json, "save the profile as JSON");
  run_cmd->add_option("--report", run.report,
                      "save the profile as one self-contained HTML page: verdict, stage table, latency histogram, a "
                      "timeline of the stages per thread");
  // One name per concept across commands: bench and publish say --frames too (--max-frames stays as an alias).
  run_cmd->add_option("--frames,--max-frames", run.max_frames, "read at most N frames of each source, then stop (-1: all)")
      ->capture_default_str()
      ->check(integer_in(-1, INT64_MAX));
  run_cmd->add_flag("-q,--quiet", run.quiet, "no progress line, no profile table on stderr");
  run_cmd->add_flag("--verbose", run.verbose, "let FFmpeg, OpenCV and GStreamer print their own messages (folded into one line otherwise)");
  add_runtime_options(*run_cmd, run, run_policy);
  std::string run_reconnect = "auto";
  double run_stall_s = run.stall_timeout_ms / 1000.0, run_reconnect_for_s = 0;
  add_live_source_options(*run_cmd, run, run_reconnect, run_stall_s, run_reconnect_for_s);
  TrackFlags run_track;
  add_tracking_options(*run_cmd, run, run_track);
  double run_drain_timeout_s = run.drain_timeout_ms / 1000.0;
  add_stop_options(*run_cmd, run_drain_timeout_s);

  BenchOptions bench;
  std::string bench_layout = "auto";
  CLI::App* bench_cmd = app.add_subcommand("bench", "time the engine alone (warm-up, then N iterations)");
  add_model_options(*bench_cmd, bench.model, bench_layout);
  add_bench_options(*bench_cmd, bench);

  PublishOptions publish;
  CLI::App* publish_cmd = app.add_subcommand("publish", "stream a video or camera into a Redis stream, one frame per entry");
  add_publish_options(*publish_cmd, publish);

  ModelInfoOptions model_info;
  CLI::App* info_cmd = app.add_subcommand("model-info", "show a model's inputs and outputs and where the native engine runs each node");
  add_model_info_options(*info_cmd, model_info);

  ValOptions val;
  std::string val_layout = "auto";
  set_val_defaults(val);
  CLI::App* val_cmd = app.add_subcommand("val", "measure a detector's accuracy on a COCO or YOLO dataset (pycocotools' mAP)");
  add_model_options(*val_cmd, val.model, val_layout);
  // val runs every image at one size, not each image's own.
  val_cmd->get_option("--input-size")
      ->description("network input: auto (the model's own size; 640x640 for a dynamic model declaring none), W,H, or N for NxN");
  add_val_options(*val_cmd, val);

  QuantizeOptions quantize;
  std::string quantize_layout = "auto";
  CLI::App* quantize_cmd =
      app.add_subcommand("quantize", "write an int8 (QDQ) copy of an fp32 ONNX model, calibrated on images or a video");
  add_quantize_options(*quantize_cmd, quantize, quantize_layout);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    log_error("%s (see 'streamdet --help')", e.what());
    return exit_code::kUsage;
  }

  // Errors are values on every path we know of; an exception reaching here is a library failing
  // in a way we did not foresee: one line and exit 1 (memory: the budget checks missed a case),
  // never std::terminate's abort.
  try {
    if (run_cmd->parsed()) {
      if (auto st = resolve_policy(run_policy, run); !st) return report_error(st.error());
      if (auto st = resolve_tracking(run_track, run); !st) return report_error(st.error());
      if (run_reconnect != "auto" && run_reconnect != "never")
        return report_error(Error{ErrorCode::kUsage, "unknown --reconnect '" + run_reconnect + "' (auto|never)"});
      run.reconnect = run_reconnect == "auto";
      run.stall_timeout_ms = run_stall_s * 1000.0;
      run.drain_timeout_ms = run_drain_timeout_s * 1000.0;
      run.reconnect_for_ms = run_reconnect_for_s * 1000.0;
      return run_command(run, run_layout);
    }
    if (publish_cmd->parsed()) {
      publish.redis_password = redis_password_from_environment();
      install_interrupt_handler();
      auto st = run_publish(publish);
      return st ? exit_code::kOk : report_error(st.error());
    }
    if (info_cmd->parsed()) {
      auto st = run_model_info(model_info);
      return st ? exit_code::kOk : report_error(st.error());
    }
    if (val_cmd->parsed()) {
      if (auto st = resolve_layout(val_layout, val.model); !st) return report_error(st.error());
      install_interrupt_handler();
      auto st = run_val(val);
      return st ? exit_code::kOk : report_error(st.error());
    }
    if (quantize_cmd->parsed()) {
      if (auto st = resolve_layout(quantize_layout, quantize.model); !st) return report_error(st.error());
      install_interrupt_handler();
      auto st = run_quantize(quantize);
      return st ? exit_code::kOk : report_error(st.error());
    }
    if (bench_cmd->parsed()) {
      if (auto st = resolve_layout(bench_layout, bench.model); !st) return report_error(st.error());
      auto st = run_bench(bench);
      return st ? exit_code::kOk : report_error(st.error());
    }
  } catch (const std::bad_alloc&) {
    log_error("out of memory (a size the memory checks did not foresee: lower --input-size or --max-memory, and please report it)");
    return exit_code::kInternal;
  } catch (const std::exception& e) {
    log_error("internal error: %s (please report it)", e.what());
    return exit_code::kInternal;
  }
  return exit_code::kUsage;
}

}  // namespace sd
