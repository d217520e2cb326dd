#include "app/run_command_options.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "app/option_checks.h"
#include "core/cpu_isa.h"
#include "core/log.h"
#include "core/memory_budget.h"
#include "runtime/worker_plan.h"

namespace sd {

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
  cmd.add_option("--precision", m.precision,
                 "native engine: auto (fp16 on a CUDA GPU, fp32 on the CPU), fp32 (float32), fp16 (the GPU's tensors in fp16, "
                 "float32 accumulation, inputs and outputs float32; refused on the CPU), bf16 (CPU convolutions with bf16 "
                 "weights and activations, float32 accumulation; needs avx512_bf16 or AMX, refused elsewhere)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "fp32", "fp16", "bf16"}));
  cmd.add_option("--cuda-graphs", m.cuda_graphs,
                 "native engine on a GPU: on records each input shape's GPU work once as a CUDA graph and replays it "
                 "(where no CPU step sits between the GPU's), off launches every kernel")
      ->default_str("on")
      ->check(CLI::IsMember({"on", "off"}));
  cmd.add_option("--preprocess-on", m.preprocess_on,
                 "where frames are letterboxed into the network input: auto (on the GPU when the model runs on a CUDA "
                 "GPU, else the CPU), cpu, gpu (the frame uploaded as it is and letterboxed by a CUDA kernel)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  cmd.add_option("--postprocess-on", m.postprocess_on,
                 "where the detection head is decoded and NMS'd: auto (on the GPU when the model runs on a CUDA GPU "
                 "and the head is YOLOv8, YOLOv5 or YOLOX, else the CPU), cpu, gpu (CUDA kernels on the model's output, "
                 "only the kept boxes copied back)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
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
  // Process-wide, applied while the options are parsed: before any oneDNN primitive exists.
  cmd.add_option_function<std::string>(
         "--cpu-isa",
         [](const std::string& text) {
           if (!cpu::cap_isa(*cpu::parse_isa(text)))
             log_warn("--cpu-isa %s: oneDNN did not take the cap (its own ONEDNN_MAX_CPU_ISA is set?); our kernels are capped", text.c_str());
         },
         "highest x86 instruction set the CPU engine may use, ours and oneDNN's: sse4.2|avx2|avx2_vnni|avx512|avx512_vnni|avx512_bf16 "
         "(default: the best this processor runs); to measure the AVX2 (or AVX-VNNI) path on an AVX-512 machine")
      ->check(CLI::IsMember({"sse4.2", "avx2", "avx2_vnni", "avx512", "avx512_vnni", "avx512_bf16"}));
  cmd.add_flag("--agnostic", m.agnostic, "class-agnostic NMS (boxes of different classes suppress each other)");
  cmd.add_option("--max-det", m.max_det, "maximum detections per frame")->capture_default_str()->check(integer_in(1, 100000));
}

Status resolve_layout(const std::string& text, ModelOptions& m) {
  auto layout = parse_layout(text);
  if (!layout) return fail(ErrorCode::kUsage, "unknown --layout '" + text + "' (auto|yolov8|yolov5|yolov10|yolox|ssd|darknet)");
  m.layout = *layout;
  return ok();
}

namespace {

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
  cmd.add_option("--decode", r.decode,
                 "where video files and streams are decoded: auto (NVDEC for H.264/HEVC where the GPU and driver have it, else "
                 "the CPU, said once), cpu (FFmpeg), nvdec (NVDEC or exit 3)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, VideoDecode>{
          {"auto", VideoDecode::kAuto}, {"cpu", VideoDecode::kCpu}, {"nvdec", VideoDecode::kNvdec}}))
      ->default_str("auto");
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
void add_tracking_options(CLI::App& cmd, RunOptions& r, RunFlags& flags) {
  track::TrackerOptions& t = r.tracker;
  cmd.add_option("--track", flags.track,
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
  cmd.add_option("--track-reid-buffer", t.reid_buffer,
                 "frames (at 30 fps) a lost track with a colour descriptor is kept for an object that comes back looking "
                 "the same near where it was heading (at most --track-buffer: never)")
      ->capture_default_str()
      ->check(real_in(0, 1e6, Interval::kClosed, "frames"));
  cmd.add_option("--track-split-box", t.split_box,
                 "a detection beside the box a track took of its partly hidden object, the two together at most this many "
                 "times the object's size, is its other part: it starts no track (0: off)")
      ->capture_default_str()
      ->check(real_in(0, 100, Interval::kClosed));
  cmd.add_option("--track-partial-box", t.partial_box,
                 "a box narrower or shorter than this share of its object seen alone, while its track overlaps another, "
                 "is the part still seen: the tracker keeps the whole object's size (0: off)")
      ->capture_default_str()
      ->check(real_in(0, 1, Interval::kClosed));
  cmd.add_flag("--track-agnostic", t.class_agnostic, "a track may take detections of any class (default: its own class only)");
  cmd.add_option("--track-appearance", flags.track_appearance,
                 "on: each track also keeps its boxes' colours, which tell apart objects close together; off: boxes alone")
      ->capture_default_str();
  cmd.add_option("--line", flags.lines,
                 "[SOURCE/]NAME:x1,y1,x2,y2: count tracks crossing this line, 'in' from its left to its right going "
                 "from point 1 to point 2 (pixels, or fractions of the frame: 0.5,0,0.5,1); repeatable");
  cmd.add_option("--zone", flags.zones,
                 "[SOURCE/]NAME:x1,y1,x2,y2,x3,y3,...: a polygon; count tracks entering and leaving it, those inside, "
                 "their dwell time; repeatable");
  cmd.add_option("--events", r.events, "line crossings and zone entries and exits as JSON Lines; - for standard output");
}

Status resolve_tracking(const RunFlags& flags, RunOptions& r) {
  bool known = false;
  for (TrackMode m : {TrackMode::kAuto, TrackMode::kByteTrack, TrackMode::kIou, TrackMode::kOff})
    if (flags.track == track_mode_name(m)) {
      r.track = m;
      known = true;
    }
  if (!known) return fail(ErrorCode::kUsage, "unknown --track '" + flags.track + "' (auto|bytetrack|iou|off)");
  track::TrackerOptions& t = r.tracker;
  if (flags.track_appearance != "on" && flags.track_appearance != "off")
    return fail(ErrorCode::kUsage, "unknown --track-appearance '" + flags.track_appearance + "' (on|off)");
  t.appearance = flags.track_appearance == "on";
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



}  // namespace

void add_run_options(CLI::App& cmd, RunFlags& f) {
  RunOptions& run = f.run;
  add_model_options(cmd, run.model, f.layout);
  cmd.add_option("-s,--source", run.sources,
                 "video file, image file/folder/glob, camera (0, /dev/video0), GStreamer pipeline ending in "
                 "appsink, rtsp://... / http://... URL, or synth:key=value,... (a synthetic scene; see README); repeat for several sources in one process")
      ->required()
      ->take_all();
  cmd.add_option("-o,--output", run.output,
                 "annotated video to write (.mp4, .avi, .mkv; - for Matroska on standard output); with several "
                 "sources {i} or {name} in the name, else _<i> is added");
  cmd.add_option("-d,--detections", run.detections, "detections as JSON Lines, one line per frame (all sources); - for standard output");
  cmd.add_option("--sink", run.sinks,
                 "another output, its kind from its name: a video file, a .jsonl file, or "
                 "redis://[user:pass@]host:port/STREAM (detections into a Redis stream); repeat for several")
      ->take_all();
  cmd.add_option("--profile-json", run.profile_json, "save the profile as JSON");
  cmd.add_option("--report", run.report,
                 "save the profile as one self-contained HTML page: verdict, stage table, latency histogram, a "
                 "timeline of the stages per thread");
  // One name per concept across commands: bench and publish say --frames too (--max-frames stays as an alias).
  cmd.add_option("--frames,--max-frames", run.max_frames, "read at most N frames of each source, then stop (-1: all)")
      ->capture_default_str()
      ->check(integer_in(-1, INT64_MAX));
  cmd.add_flag("-q,--quiet", run.quiet, "no progress line, no profile table on stderr");
  cmd.add_flag("--verbose", run.verbose, "let FFmpeg, OpenCV and GStreamer print their own messages (folded into one line otherwise)");
  add_runtime_options(cmd, run, f.policy);
  f.stall_s = run.stall_timeout_ms / 1000.0;
  add_live_source_options(cmd, run, f.reconnect, f.stall_s, f.reconnect_for_s);
  add_tracking_options(cmd, run, f);
  f.drain_timeout_s = run.drain_timeout_ms / 1000.0;
  add_stop_options(cmd, f.drain_timeout_s);
}

Status resolve_run_flags(RunFlags& f) {
  RunOptions& run = f.run;
  SD_TRY(resolve_policy(f.policy, run));
  SD_TRY(resolve_tracking(f, run));
  if (f.reconnect != "auto" && f.reconnect != "never")
    return fail(ErrorCode::kUsage, "unknown --reconnect '" + f.reconnect + "' (auto|never)");
  run.reconnect = f.reconnect == "auto";
  run.stall_timeout_ms = f.stall_s * 1000.0;
  run.drain_timeout_ms = f.drain_timeout_s * 1000.0;
  run.reconnect_for_ms = f.reconnect_for_s * 1000.0;
  return resolve_layout(f.layout, run.model);
}

Result<RunOptions> run_options_from_keywords(const std::string& model, const std::vector<std::string>& sources,
                                             const std::vector<RunKeyword>& keywords) {
  CLI::App cmd{"run"};
  RunFlags flags;
  add_run_options(cmd, flags);
  // Arguments as a command line would give them, each value as --name=value (a value may start
  // with a dash: "-" for standard output, -1).
  std::vector<std::string> args{"--model=" + model};
  for (const std::string& s : sources) args.push_back("--source=" + s);
  for (const RunKeyword& k : keywords) {
    std::string name = k.name;
    std::replace(name.begin(), name.end(), '_', '-');
    const CLI::Option* opt = name.size() > 1 ? cmd.get_option_no_throw("--" + name) : nullptr;
    if (opt == nullptr || name == "model" || name == "source")
      return fail(ErrorCode::kUsage, "unknown option '" + k.name + "'" +
                                         (opt ? " (model and source are run's own arguments)" : " (the options are streamdet run's, e.g. max_age for --max-age)"));
    if (opt->get_expected_max() == 0) {  // a flag: true or false
      if (k.values.size() != 1 || (k.values[0] != "true" && k.values[0] != "false"))
        return fail(ErrorCode::kUsage, k.name + ": must be True or False");
      if (k.values[0] == "true") args.push_back("--" + name);
      continue;
    }
    if (k.values.empty()) return fail(ErrorCode::kUsage, k.name + ": no value given");
    for (const std::string& v : k.values) args.push_back("--" + name + "=" + v);
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector of arguments last first
  try {
    cmd.parse(std::move(args));
  } catch (const CLI::ParseError& e) {
    return fail(ErrorCode::kUsage, e.what());
  }
  SD_TRY(resolve_run_flags(flags));
  return std::move(flags.run);
}

std::optional<std::string> redis_password_from_environment() {
  const char* password = std::getenv("REDISCLI_AUTH");
  if (!password || !*password) return std::nullopt;
  return std::string(password);
}

}  // namespace sd
