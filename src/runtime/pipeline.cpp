// The pipelined runtime. Threads and the queues between them:
//
//   reader[s] --raw[s]--> preprocess[s] --lane s of FrameScheduler--> worker[0..N) --done[s]--> sink[s]
//
// One reader (decode) and one preprocess thread per source, N inference workers shared by all
// sources (each with its own execution context; micro-batches across sources), and one sink
// thread per source that restores source order and draws + writes to every sink. Each stage is
// an object in runtime/stages/, sharing the run's state through RunContext; this file sets the
// run up, wires the stages and finalizes the outputs. Every queue is bounded; drops happen only
// where a policy says so, and each is counted. Every frame read ends in exactly one outcome
// (written, or dropped with its reason), which its source is told (Source::settle). Packets come
// from a fixed pool, so memory is bounded and the steady state allocates nothing.
#include "runtime/pipeline.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/build_info.h"
#include "core/human_bytes.h"
#include "core/memory_budget.h"
#include "core/log.h"
#include "core/uri_redaction.h"
#include "runtime/drain_deadline.h"
#include "runtime/interrupt.h"
#include "runtime/postprocess_on.h"
#include "runtime/preprocess_on.h"
#include "runtime/live_stats.h"
#include "runtime/progress.h"
#include "runtime/run_context.h"
#include "runtime/stages/inference_stage.h"
#include "runtime/stages/output_stage.h"
#include "runtime/stages/preprocess_stage.h"
#include "runtime/stages/read_stage.h"
#include "runtime/trace.h"
#include "runtime/worker_plan.h"
#include "model/model_info.h"
#include "report/html_report.h"
#include "sinks/atomic_file.h"
#include "sinks/output_paths.h"
#include "serve/http_server.h"
#include "sinks/sink_factory.h"
#include "sinks/web_view_sink.h"
#include "runtime/tracking.h"
#include "sources/source.h"

namespace sd {

const char* frame_policy_name(FramePolicy p) {
  switch (p) {
    case FramePolicy::kAuto: return "auto";
    case FramePolicy::kBlock: return "block";
    case FramePolicy::kLatest: return "latest";
    case FramePolicy::kDropOldest: return "drop-oldest";
  }
  return "auto";
}

namespace {

QueuePolicy queue_policy_for(FramePolicy p, bool live) {
  switch (p) {
    case FramePolicy::kBlock: return QueuePolicy::kBlock;
    case FramePolicy::kLatest: return QueuePolicy::kLatest;
    case FramePolicy::kDropOldest: return QueuePolicy::kDropOldest;
    case FramePolicy::kAuto: break;
  }
  return live ? QueuePolicy::kLatest : QueuePolicy::kBlock;
}

// The run's outputs in the order they are written: the JSON Lines first, then the videos, then
// the --sink targets as named (the order only matters when one of them fails: see OutputStage).
std::vector<SinkTarget> sink_targets(const RunOptions& o) {
  std::vector<SinkTarget> targets;
  if (!o.detections.empty()) targets.push_back({"-d", o.detections, SinkTarget::Kind::kJsonl});
  if (!o.output.empty()) targets.push_back({"-o", o.output, SinkTarget::Kind::kVideo});
  for (const auto& t : o.sinks) targets.push_back({"--sink", t, SinkTarget::Kind::kByName});
  if (!o.events.empty()) targets.push_back({"--events", o.events, SinkTarget::Kind::kEvents});
  return targets;
}

class Pipeline {
 public:
  Pipeline(const RunOptions& options, const SourceOpener& open, RunEmbedding embedding = {})
      : options_(options), open_(open), embedding_(std::move(embedding)), run_(options) {
    run_.embedder_stop = embedding_.stop_requested;
  }

  RunOutcome run() {
    RunOutcome outcome;
    if (auto st = setup(); !st) {
      outcome.status = st;
      close_sources();  // nothing was read: nothing to acknowledge, but connections are closed
      return outcome;
    }
    outcome.started = true;
    execute();
    if (server_) server_->stop();  // served until the outputs were finalized; its threads end here
    outcome.profile = run_.profiler.report();
    for (const auto& lane : run_.lanes)
      if (lane.counter) outcome.profile.counting.append(lane.counter->counts());
    outcome.status = final_status();
    // An interrupted run says it in its exit line; any other end (--frames reached, an error) here.
    if (outcome.status || outcome.status.error().code != ErrorCode::kInterrupted)
      for (const auto& lane : run_.lanes)
        if (std::optional<int64_t> n = lane.source->left_pending(); n && *n > 0)
          log_info("%s: %lld entries left pending for another worker", lane.info.uri.c_str(), static_cast<long long>(*n));
    // The profile and the trace, written under their temporary names, go in place complete.
    auto keep_first_error = [&](Status st) {
      if (!st && outcome.status) outcome.status = st;
    };
    if (!options_.profile_json.empty()) keep_first_error(write_profile_json(outcome.profile));
    if (!options_.trace.empty()) {
      Status st = write_chrome_trace(run_.profiler, trace_file_.write_path(), options_.trace);
      keep_first_error(st ? trace_file_.commit() : st);
    }
    if (!options_.report.empty()) {
      ReportContext context{options_.model.model, "", run_.health.snapshot()};
      const std::string html = render_html_report(report_data(run_.profiler, outcome.profile, context));
      Status st = write_html_report(report_file_.write_path(), options_.report, html);
      if (!st) report_file_.discard();
      keep_first_error(st ? report_file_.commit() : st);
    }
    return outcome;
  }

 private:
  Status setup();
  Status open_sources(int decode_threads, cv::Size& largest);
  Status open_sinks();
  Status set_up_counting();
  void make_counters();
  Status start_server(const ServeAddress& address);
  Status check_files() const;
  Status check_memory_in_flight(size_t packets, cv::Size largest_frame) const;
  Status write_profile_json(const ProfileReport& profile);
  void execute();
  void finalize();
  void close_sources();
  Status final_status();
  std::string interrupted_message() const;

  const RunOptions& options_;
  const SourceOpener& open_;
  RunEmbedding embedding_;  // a copy: the default one is a temporary
  RunContext run_;
  AtomicFile profile_file_, trace_file_, report_file_;  // created at set-up: an unwritable path fails before the first frame
  std::vector<std::unique_ptr<InferenceContext>> contexts_;
  std::vector<SourcePlaces> places_;  // per source, from --line / --zone (set_up_counting)
  std::unique_ptr<WebServer> server_;  // after run_: stopped before what it reads goes away
};

Status Pipeline::final_status() {
  if (auto e = run_.first_error()) return tl::unexpected(*e);
  if (interrupt_requested()) return fail(ErrorCode::kInterrupted, interrupted_message());
  // Every frame that could be decoded was processed; say what could not (exit 7).
  const ProfileReport report = run_.profiler.report();
  std::string damage;
  for (size_t s = 0; s < run_.lanes.size(); ++s) {
    std::optional<std::string> d = run_.lanes[s].source->damage();
    const int64_t corrupt = s < report.sources.size() ? report.sources[s].drops[static_cast<size_t>(DropReason::kCorrupt)] : 0;
    if (!d && corrupt > 0) d = run_.lanes[s].info.uri + ": " + std::to_string(corrupt) + " frames could not be decoded";
    if (d) damage += (damage.empty() ? "" : "; ") + *d;
  }
  if (!damage.empty()) return fail(ErrorCode::kDamagedSource, damage);
  return ok();
}

// "interrupted after N frames", what the drain left undone, and what each Redis source left
// pending for another worker (0 when the drain finished everything it had read).
std::string Pipeline::interrupted_message() const {
  std::string message = "interrupted after " + std::to_string(run_.profiler.report().frames) + " frames";
  if (run_.was_cut_short()) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", options_.drain_timeout_ms / 1000.0);
    message += "; the frames still in flight after --drain-timeout " + std::string(seconds) + " s were dropped";
  }
  for (const auto& lane : run_.lanes)
    if (std::optional<int64_t> n = lane.source->left_pending())
      message += "; " + lane.info.uri + ": " + std::to_string(*n) + " entries left pending for another worker";
  return message;
}

Status Pipeline::open_sources(int decode_threads, cv::Size& largest) {
  const int n_sources = static_cast<int>(options_.sources.size());
  for (int s = 0; s < n_sources; ++s) {
    SourceOptions so;
    so.source_id = s;
    so.decode_threads = decode_threads;
    so.decode = options_.decode;
    so.max_age_ms = options_.max_age_ms;
    so.should_stop = [this] { return run_.stopping(); };
    so.redis_password = options_.redis_password;
    so.claim_after_ms = options_.claim_after_ms;
    so.max_pixels = options_.max_pixels;
    so.reconnect = options_.reconnect;
    so.stall_timeout_ms = options_.stall_timeout_ms;
    so.reconnect_for_ms = options_.reconnect_for_ms;
    const std::string& spec = options_.sources[static_cast<size_t>(s)];
    const std::string shown = without_password(spec);  // what the profile, report and health show
    so.health = &run_.health.add(shown);
    auto source = open_(spec, so);
    // A stop request cuts an opening stream short (FFmpeg then fails it with "Invalid data" or
    // "Immediate exit requested"): that is an interrupted run, not a source that failed.
    if (!source && interrupt_requested()) return fail(ErrorCode::kInterrupted, "interrupted while opening source " + shown);
    if (!source) return tl::unexpected(source.error());
    SourceLane lane;
    lane.info = (*source)->info();
    lane.source = std::move(*source);
    lane.policy = queue_policy_for(options_.policy, lane.info.live);
    largest.width = std::max(largest.width, lane.info.width);
    largest.height = std::max(largest.height, lane.info.height);
    run_.lanes.push_back(std::move(lane));
    run_.profiler.add_source(shown, run_.lanes.back().info.live, run_.lanes.back().info.decoder);
  }
  return ok();
}

// --line and --zone per source, in its pixels, each source with them counted by its own counter
// (fed by its output thread after tracking). Refused here (exit 2) before the model is loaded.
Status Pipeline::set_up_counting() {
  if (options_.places.empty()) return ok();
  std::vector<PlaceSource> sources;
  for (size_t s = 0; s < run_.lanes.size(); ++s) {
    const SourceLane& lane = run_.lanes[s];
    sources.push_back({without_password(lane.info.uri), source_file_name(options_.sources[s]), lane.info.width,
                       lane.info.height, tracks_source(options_.track, lane.info.kind)});
  }
  SD_ASSIGN_OR_RETURN(places_, resolve_places(options_.places, sources));
  return ok();
}

// After the model is loaded: the counts are by class name.
void Pipeline::make_counters() {
  for (size_t s = 0; s < places_.size() && s < run_.lanes.size(); ++s) {
    if (places_[s].empty()) continue;
    SourceLane& lane = run_.lanes[s];
    lane.counter = std::make_unique<PlaceCounter>(static_cast<int>(s), without_password(lane.info.uri), std::move(places_[s]),
                                                  run_.det.class_names, default_band_px(lane.info.width, lane.info.height),
                                                  options_.tracker.track_buffer * 1000.0 / 30.0);
  }
}

// Every output is opened before the first frame, so that a bad path fails fast. The videos are
// opened first: they are written under temporary names and leave nothing behind when a later
// output fails to open; a .jsonl file is only checked here and created by Sink::start().
Status Pipeline::open_sinks() {
  SinkContext context;
  for (const auto& l : run_.lanes) context.sources.push_back({l.info.uri, l.info.fps, l.info.width, l.info.height});
  context.class_names = run_.det.class_names;
  context.model_name = std::filesystem::path(options_.model.model).filename().string();
  context.redis_password = options_.redis_password;
  context.should_stop = [this] { return run_.stopping(); };
  const std::vector<SinkTarget> targets = sink_targets(options_);
  std::vector<size_t> open_order(targets.size());
  std::iota(open_order.begin(), open_order.end(), size_t{0});
  std::stable_partition(open_order.begin(), open_order.end(), [&](size_t i) { return targets[i].kind == SinkTarget::Kind::kVideo; });
  run_.sinks.resize(targets.size());
  for (size_t i : open_order) {
    SD_ASSIGN_OR_RETURN(run_.sinks[i], open_sink(targets[i], context));
    run_.draw = run_.draw || run_.sinks[i]->wants_drawn_frame();
  }
  if (embedding_.make_sink) run_.sinks.push_back(embedding_.make_sink(context));
  for (const auto& sink : run_.sinks) run_.keep_undrawn = run_.keep_undrawn || sink->wants_undrawn_frame();
  run_.sinks_need_pixels = run_.draw || run_.keep_undrawn;
  std::vector<std::string> names;
  for (const auto& sink : run_.sinks) names.push_back(sink->name());
  run_.profiler.set_outputs(std::move(names));
  return ok();
}

Status Pipeline::setup() {
  nvtx_initialize();  // before any of our threads exist
  if (options_.sources.empty()) return fail(ErrorCode::kUsage, "no --source given");
  if (options_.workers < 0) return fail(ErrorCode::kUsage, "--workers must be 0 (auto) or more");
  if (options_.batch < 1) return fail(ErrorCode::kUsage, "--batch must be at least 1");
  if (options_.every < 1) return fail(ErrorCode::kUsage, "--every must be at least 1");
  SD_TRY(check_sink_targets(sink_targets(options_)));
  std::optional<ServeAddress> serve;
  if (!options_.serve.empty()) {
    SD_ASSIGN_OR_RETURN(serve, parse_serve_address(options_.serve));
  }
  if (options_.show) SD_TRY(LiveView::check_display_available());
  SD_TRY(check_files());

  const int n_sources = static_cast<int>(options_.sources.size());
  // Decoding runs beside inference: on a CPU engine every decoder thread beyond the cores that
  // inference leaves free takes its time from inference (and frame threading costs CPU of its own),
  // so by default decoders get the free cores, and a single thread when there are none.
  const int cores = std::max(1, cpu_count());
  const int inference_threads = options_.model.threads > 0 ? options_.model.threads : cores;
  const int decode_threads =
      options_.decode_threads > 0 ? options_.decode_threads : std::max(1, (cores - inference_threads) / n_sources);
  cv::Size largest;
  SD_TRY(open_sources(decode_threads, largest));
  SD_TRY(set_up_counting());  // the sources' sizes are known: lines and zones are checked now

  // Inference threads are divided among the workers (worker_plan.h says how many by default).
  const bool any_live = std::any_of(run_.lanes.begin(), run_.lanes.end(), [](const SourceLane& l) { return l.info.live; });
  const WorkerPlan plan = plan_workers(options_.workers, options_.model.threads, cores, resolved_engine_name(options_.model), any_live);
  SD_TRY(check_thread_budget(plan, cores));
  run_.workers = plan.workers;
  ModelOptions model = options_.model;
  model.threads = plan.threads_per_worker;
  // With several sources of different sizes, auto sizes the network for the largest one.
  SD_ASSIGN_OR_RETURN(run_.det, load_detector(model, largest));
  bool any_tracked = false;
  for (size_t s = 0; s < run_.lanes.size(); ++s) {
    SourceLane& lane = run_.lanes[s];
    lane.tracker = make_tracker(options_, lane.info);
    any_tracked = any_tracked || lane.tracker;
    if (lane.tracker) run_.profiler.set_tracks(static_cast<int>(s), 0, 0);  // tracked: 0 live until a frame says more
  }
  run_.det.decode.conf_threshold = decode_threshold(options_.model.conf, options_.tracker, any_tracked);
  make_counters();
  const Detector& det = run_.det;
  run_.batch = options_.batch;
  if (run_.batch > 1 && !det.engine->capabilities().dynamic_batch)
    return fail(ErrorCode::kUsage, "--batch " + std::to_string(run_.batch) + ": model " + model.model +
                                       " has a fixed batch size of 1");
  log_info("model %s: engine %s (%d worker%s x %d thread%s), layout %s, %d classes, input %dx%d, preprocess %s", model.model.c_str(),
           det.engine->name().c_str(), plan.workers, plan.workers == 1 ? "" : "s", plan.threads_per_worker,
           plan.threads_per_worker == 1 ? "" : "s", std::string(layout_name(det.decoder->layout())).c_str(),
           det.decoder->num_classes(), det.input_size.width, det.input_size.height, det.preprocess.str().c_str());

  for (auto& lane : run_.lanes) lane.source->prefer_size(det.input_size);
  contexts_.push_back(std::move(run_.det.first_context));
  for (int w = 1; w < run_.workers; ++w) {
    SD_ASSIGN_OR_RETURN(auto ctx, det.engine->create_context(context_options(model)));
    contexts_.push_back(std::move(ctx));
  }
  // Every worker's context is made alike: the first one says whether frames can go to its GPU.
  SD_ASSIGN_OR_RETURN(PreprocessPlace place,
                      choose_preprocess_place(model.preprocess_on, det.engine->capabilities().device, det.engine->name(),
                                              contexts_[0]->gpu_frame_input()));
  run_.frames_on_gpu = place.gpu;
  run_.profiler.set_preprocess_place(place.where);
  if (place.gpu) log_info("preprocess: frames letterboxed on %s", place.where.c_str());
  bool said_download = false;
  for (size_t s = 0; s < run_.lanes.size(); ++s) {
    SourceLane& lane = run_.lanes[s];
    const std::string path = nvdec_frame_path(place, det.engine->capabilities().device, lane.info, *lane.source);
    if (path.empty()) continue;
    run_.profiler.set_frame_path(static_cast<int>(s), path);
    if (path.find("downloaded") != std::string::npos && !std::exchange(said_download, true))
      log_info("--decode: NVDEC's frames are %s", path.substr(std::string("nvdec -> ").size()).c_str());
  }
  SD_ASSIGN_OR_RETURN(run_.postprocess,
                      choose_postprocess_place(model.postprocess_on, det.engine->capabilities().device, det.engine->name(),
                                               contexts_[0]->gpu_detect_output(), *det.decoder, det.decode));
  run_.profiler.set_postprocess_place(run_.postprocess.where);
  if (run_.postprocess.gpu) log_info("postprocess: decode and NMS on %s", run_.postprocess.where.c_str());
  if (!run_.postprocess.why_cpu.empty()) log_info("postprocess: on the CPU: %s", run_.postprocess.why_cpu.c_str());

  if (!options_.profile_json.empty()) {
    SD_ASSIGN_OR_RETURN(profile_file_, AtomicFile::create(options_.profile_json, "profile"));
  }
  if (!options_.trace.empty()) {
    SD_ASSIGN_OR_RETURN(trace_file_, AtomicFile::create(options_.trace, "trace"));
  }
  if (!options_.report.empty()) {
    SD_ASSIGN_OR_RETURN(report_file_, AtomicFile::create(options_.report, "report"));
  }
  const size_t in_flight_per_source = 4;
  size_t pool_size = 2 * static_cast<size_t>(run_.workers * run_.batch) + 2;
  std::vector<FrameScheduler::LaneConfig> lane_configs;
  for (SourceLane& lane : run_.lanes) {
    const size_t q = static_cast<size_t>(std::max(1, options_.queue));
    size_t raw_cap = lane.policy == QueuePolicy::kLatest ? 1 : (lane.policy == QueuePolicy::kBlock ? 2 : q);
    size_t sched_cap = lane.policy == QueuePolicy::kLatest
                           ? 1
                           : (lane.policy == QueuePolicy::kBlock ? static_cast<size_t>(run_.workers * run_.batch) : q);
    lane.raw = std::make_unique<BoundedQueue<PacketPtr>>(raw_cap, lane.policy);
    lane_configs.push_back({lane.policy, sched_cap});
    pool_size += raw_cap + sched_cap + in_flight_per_source;
  }
  SD_TRY(check_memory_in_flight(pool_size, largest));
  SD_TRY(open_sinks());
  run_.pool = std::make_unique<PacketPool>(pool_size);
  for (auto& lane : run_.lanes) lane.done = std::make_unique<BoundedQueue<PacketPtr>>(pool_size, QueuePolicy::kBlock);
  run_.scheduler = std::make_unique<FrameScheduler>(lane_configs);
  run_.profiler.set_workers(run_.workers);

  if (options_.show) {
    std::vector<std::string> names;
    for (const auto& l : run_.lanes) names.push_back("streamdet: " + l.info.uri);
    run_.view = std::make_unique<LiveView>(names, det.class_names);
  }
  if (serve) SD_TRY(start_server(*serve));
  // Last: nothing after this can refuse the run, so an output written in place (JSON Lines) is
  // created or truncated only now, and a run refused at start leaves every existing file as it was.
  for (auto& sink : run_.sinks) SD_TRY(sink->start());
  return ok();
}

// The web view's sink joins the outputs (last: it never fails), and the server starts listening
// before the first frame, so that a port in use fails the run before it begins.
Status Pipeline::start_server(const ServeAddress& address) {
  auto board = std::make_shared<FrameBoard>(run_.lanes.size(), options_.serve_fps);
  run_.sinks.push_back(std::make_unique<WebViewSink>(board, run_.det.class_names, run_.draw));
  const Clock::time_point since = Clock::now();
  WebServerConfig config{address, options_.serve_token, board, [this, since] { return collect_live_stats(run_, since); }};
  SD_ASSIGN_OR_RETURN(server_, WebServer::start(std::move(config)));
  const std::string host = address.host.find(':') != std::string::npos ? "[" + address.host + "]" : address.host;
  // Also with --quiet: with --serve 0 this line is the only way to learn the port.
  log_notice("web view: http://%s:%d/ (also /metrics, /health)%s", host.c_str(), server_->port(),
           options_.serve_token.empty() ? "" : "; the page needs ?token=...");
  if (embedding_.web_view_started) embedding_.web_view_started("http://" + host + ":" + std::to_string(server_->port()) + "/");
  if (!is_loopback_host(address.host) && options_.serve_token.empty())
    log_warn("--serve %s: listening beyond this machine without --serve-token: anyone who can reach port %d sees the "
             "video and the figures",
             options_.serve.c_str(), server_->port());
  return ok();
}

// Outputs that are also inputs, or the same file twice, are refused before anything is opened.
Status Pipeline::check_files() const {
  std::vector<NamedFile> inputs, outputs;
  inputs.push_back({"--model", options_.model.model});
  if (!options_.model.weights.empty()) inputs.push_back({"--weights", options_.model.weights});
  else if (is_darknet_model_path(options_.model.model))
    inputs.push_back({"--weights (beside the .cfg)", std::filesystem::path(options_.model.model).replace_extension(".weights").string()});
  if (!options_.model.classes_file.empty()) inputs.push_back({"--classes", options_.model.classes_file});
  // Every file a source reads: a video or an image, each image of a folder or a glob.
  for (const auto& s : options_.sources) {
    const std::vector<std::string> files = files_read_by_source(s);
    const bool one_file = files.size() == 1 && files[0] == s;
    for (const auto& f : files) inputs.push_back({"--source", f, one_file ? "" : "an image of " + s});
  }
  for (const auto& target : sink_targets(options_))
    for (auto& f : sink_files(target, options_.sources)) outputs.push_back(std::move(f));
  if (!options_.profile_json.empty()) outputs.push_back({"--profile-json", options_.profile_json});
  if (!options_.trace.empty()) outputs.push_back({"--trace", options_.trace});
  if (!options_.report.empty()) outputs.push_back({"--report", options_.report});
  return refuse_overlapping_files(inputs, outputs);
}

// Every packet in flight may hold a frame (BGR, the largest source's size) and the network input;
// a batch is copied into one more tensor per worker. Checked before any of it is allocated.
Status Pipeline::check_memory_in_flight(size_t packets, cv::Size largest_frame) const {
  const uint64_t budget = memory_budget(options_.model);
  const uint64_t frame_bytes = uint64_t{3} * static_cast<uint64_t>(std::max(0, largest_frame.width)) *
                               static_cast<uint64_t>(std::max(0, largest_frame.height));
  const uint64_t frames = frame_bytes * packets;
  if (auto over = over_budget(frames, budget)) {
    const auto& lane = *std::max_element(run_.lanes.begin(), run_.lanes.end(), [](const SourceLane& a, const SourceLane& b) {
      return static_cast<int64_t>(a.info.width) * a.info.height < static_cast<int64_t>(b.info.width) * b.info.height;
    });
    return fail(ErrorCode::kSource, "source " + lane.info.uri + ": " + std::to_string(packets) + " frames of " +
                                        std::to_string(largest_frame.width) + "x" + std::to_string(largest_frame.height) +
                                        " in flight need " + human_bytes(frames) + ", " + *over);
  }
  const cv::Size input = run_.det.input_size;
  const uint64_t inputs = input_tensor_bytes(input, 1) * packets +
                          (run_.batch > 1 ? input_tensor_bytes(input, run_.batch) * static_cast<uint64_t>(run_.workers) : 0);
  if (auto over = over_budget(frames + inputs, budget))
    return fail(ErrorCode::kModel, "model " + options_.model.model + ": the frames and network inputs in flight (" +
                                       std::to_string(packets) + " packets at " + std::to_string(input.width) + "x" +
                                       std::to_string(input.height) + ") need " + human_bytes(frames + inputs) + ", " +
                                       *over);
  return ok();
}

Status Pipeline::write_profile_json(const ProfileReport& profile) {
  {
    std::ofstream out(profile_file_.write_path(), std::ios::trunc);
    out << profile_to_json(profile).dump(2) << "\n";
    out.flush();
    if (!out) {
      profile_file_.discard();
      return fail(ErrorCode::kOutput, "writing profile " + options_.profile_json + " failed");
    }
  }
  return profile_file_.commit();
}

void Pipeline::execute() {
  // On a GPU the profile, its verdict and /metrics carry the GPU's busy share (NVML; said once
  // where it cannot be measured).
  if (const std::string dev = run_.det.engine->capabilities().device; dev.rfind("cuda", 0) == 0)
    run_.profiler.watch_gpu(dev.size() > 5 ? std::atoi(dev.c_str() + 5) : 0);
  run_.profiler.start();
  if (const std::string why = run_.profiler.gpu_busy_problem(); !why.empty()) log_warn("%s", why.c_str());
  const int n_sources = static_cast<int>(run_.lanes.size());
  std::vector<std::thread> readers, preprocessors, workers, outputs;
  for (int s = 0; s < n_sources; ++s) {
    outputs.emplace_back([this, s] { run_.guarded("sink", [&] { OutputStage(run_, s).run(); }); });
    preprocessors.emplace_back([this, s] { run_.guarded("preprocess", [&] { PreprocessStage(run_, s).run(); }); });
    readers.emplace_back([this, s] { run_.guarded("reader", [&] { ReadStage(run_, s).run(); }); });
  }
  for (int w = 0; w < static_cast<int>(contexts_.size()); ++w)
    workers.emplace_back([this, w] {
      run_.guarded("worker", [&] { InferenceStage(run_, w, std::move(contexts_[static_cast<size_t>(w)])).run(); });
    });

  // The main thread shows the live view and the progress line until the readers are done.
  ProgressLine progress(!options_.quiet && !options_.show);
  int64_t total = 0;
  for (const auto& l : run_.lanes) {
    int64_t n = l.info.frame_count;
    if (options_.max_frames >= 0) n = n < 0 ? options_.max_frames : std::min(n, options_.max_frames);
    total = (n < 0 || total < 0) ? -1 : total + n;
  }
  // A stop request's drain is bounded: past --drain-timeout what is still in flight is dropped.
  std::optional<DrainDeadline> drain_deadline;
  drain_deadline.emplace(std::chrono::milliseconds(static_cast<int64_t>(options_.drain_timeout_ms)),
                         [this] { return run_.stop_requested(); }, [this] { run_.cut_short(); });
  std::atomic<int> readers_left{n_sources};
  std::thread joiner([&] {
    for (auto& t : readers) t.join();
    readers_left = 0;
  });
  while (readers_left > 0) {
    if (run_.view) {
      if (!run_.view->pump(15)) run_.quit_by_user();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    progress.update(run_.frames_done, total);
  }
  joiner.join();
  for (auto& t : preprocessors) t.join();
  for (auto& t : workers) t.join();
  for (auto& l : run_.lanes) l.done->close();
  for (auto& t : outputs) t.join();
  drain_deadline.reset();  // every frame is settled: finalizing the outputs is not cut short
  progress.finish();
  finalize();
}

// Every output is finalized, also after an error or Ctrl-C, so what was done is kept; then the
// frames still queued after an abort are settled (not done: a Redis source leaves them pending),
// and the sources are closed (a Redis source sends its last acknowledgements).
void Pipeline::finalize() {
  for (auto& sink : run_.sinks) {
    auto st = sink->finish();
    if (!st) run_.fail_run(st.error());
  }
  run_.profiler.stop();
  for (auto& lane : run_.lanes)
    for (auto& p : lane.raw->drain()) run_.drop(std::move(p), DropReason::kAborted);
  for (size_t s = 0; s < run_.lanes.size(); ++s)
    if (int64_t n = run_.lanes[s].source->dropped_too_old(); n > 0) run_.profiler.count_drop(static_cast<int>(s), DropReason::kMaxAge, n);
  for (size_t s = 0; s < run_.lanes.size(); ++s)
    if (int64_t n = run_.lanes[s].source->damaged_frames(); n > 0) run_.profiler.count_damaged(static_cast<int>(s), n);
  for (auto& p : run_.scheduler->drain()) run_.drop(std::move(p), DropReason::kAborted);
  close_sources();
}

void Pipeline::close_sources() {
  for (auto& lane : run_.lanes) {
    auto st = lane.source->close();
    if (!st) run_.fail_run(st.error());
  }
}

}  // namespace

RunOutcome run_detection(const RunOptions& options) { return run_detection(options, open_source); }

RunOutcome run_detection(const RunOptions& options, const SourceOpener& open) {
  Pipeline pipeline(options, open);
  return pipeline.run();
}

RunOutcome run_detection(const RunOptions& options, const RunEmbedding& embedding) {
  Pipeline pipeline(options, open_source, embedding);
  return pipeline.run();
}

}  // namespace sd
