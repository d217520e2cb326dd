// The pipelined runtime. Threads and the queues between them:
//
//   reader[s] --raw[s]--> preprocess[s] --lane s of FrameScheduler--> worker[0..N) --done[s]--> sink[s]
//
// One reader (decode) and one preprocess thread per source, N inference workers shared by all
// sources (each with its own execution context; micro-batches across sources), and one sink
// thread per source that restores source order and draws + writes. Every queue is bounded;
// drops happen only where a policy says so, and each is counted. Packets come from a fixed
// pool, so memory is bounded and the steady state allocates nothing.
#include "runtime/pipeline.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/build_info.h"
#include "core/human_bytes.h"
#include "core/memory_budget.h"
#include "core/log.h"
#include "postprocess/postprocessor.h"
#include "runtime/bounded_queue.h"
#include "runtime/detector.h"
#include "runtime/worker_plan.h"
#include "runtime/frame_packet.h"
#include "runtime/frame_scheduler.h"
#include "runtime/interrupt.h"
#include "runtime/live_view.h"
#include "runtime/progress.h"
#include "runtime/reorder_buffer.h"
#include "runtime/trace.h"
#include "model/model_info.h"
#include "sinks/annotate.h"
#include "sinks/atomic_file.h"
#include "sinks/jsonl_sink.h"
#include "sinks/output_paths.h"
#include "sinks/video_sink.h"
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

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

QueuePolicy queue_policy_for(FramePolicy p, bool live) {
  switch (p) {
    case FramePolicy::kBlock: return QueuePolicy::kBlock;
    case FramePolicy::kLatest: return QueuePolicy::kLatest;
    case FramePolicy::kDropOldest: return QueuePolicy::kDropOldest;
    case FramePolicy::kAuto: break;
  }
  return live ? QueuePolicy::kLatest : QueuePolicy::kBlock;
}

// The JSONL file is shared by every source's sink thread.
class SharedJsonl {
 public:
  explicit SharedJsonl(std::unique_ptr<JsonlSink> sink) : sink_(std::move(sink)) {}
  Status write(const FrameResult& r) {
    std::lock_guard<std::mutex> lock(mutex_);
    return sink_->write(r);
  }
  Status finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    return sink_->finish();
  }

 private:
  std::mutex mutex_;
  std::unique_ptr<JsonlSink> sink_;
};

struct SourceLane {
  std::unique_ptr<Source> source;
  SourceInfo info;
  QueuePolicy policy = QueuePolicy::kBlock;
  std::unique_ptr<BoundedQueue<PacketPtr>> raw;   // reader -> preprocess
  std::unique_ptr<BoundedQueue<PacketPtr>> done;  // workers -> sink (capacity = pool: never blocks)
  std::unique_ptr<VideoSink> video;
};

class Pipeline {
 public:
  explicit Pipeline(const RunOptions& options) : options_(options), profiler_(!options.trace.empty()) {}

  RunOutcome run() {
    RunOutcome outcome;
    if (auto st = setup(); !st) {
      outcome.status = st;
      return outcome;
    }
    outcome.started = true;
    execute();
    outcome.profile = profiler_.report();
    outcome.status = final_status();
    // The profile and the trace, written under their temporary names, go in place complete.
    auto keep_first_error = [&](Status st) {
      if (!st && outcome.status) outcome.status = st;
    };
    if (!options_.profile_json.empty()) keep_first_error(write_profile_json(outcome.profile));
    if (!options_.trace.empty()) {
      Status st = write_chrome_trace(profiler_, trace_file_.temp_path(), options_.trace);
      keep_first_error(st ? trace_file_.commit() : st);
    }
    return outcome;
  }

 private:
  Status setup();
  Status check_files() const;
  Status check_memory_in_flight(size_t packets, cv::Size largest_frame) const;
  Status write_profile_json(const ProfileReport& profile);
  void execute();
  void reader_loop(int s);
  void preprocess_loop(int s);
  void worker_loop(int w, std::unique_ptr<InferenceContext> context);
  void sink_loop(int s);
  Status write_outputs(int s, FramePacket& p, StageRecorder& rec);

  // The first failure wins; everything stops, outputs are still finalized.
  void fail_run(const Error& e) {
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = e;
    }
    abort_ = true;
    for (auto& l : lanes_) {
      l.raw->close();
      l.done->close();
    }
    if (scheduler_) scheduler_->abort();
    if (pool_) pool_->close();
  }
  // A thread's body: an exception (a library failing in a way no check foresaw) ends the run with
  // one line and exit 1, outputs finalized, instead of std::terminate.
  template <class F>
  void guarded(const char* thread, F&& body) {
    try {
      body();
    } catch (const std::bad_alloc&) {
      fail_run(Error{ErrorCode::kInternal, std::string("out of memory in the ") + thread + " thread (please report it)"});
    } catch (const std::exception& e) {
      fail_run(Error{ErrorCode::kInternal, std::string("internal error in the ") + thread + " thread: " + e.what()});
    }
  }
  bool stopping() const { return abort_ || user_quit_ || interrupt_requested(); }
  Status final_status() {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (error_) return tl::unexpected(*error_);
    if (interrupt_requested())
      return fail(ErrorCode::kInterrupted, "interrupted after " + std::to_string(profiler_.report().frames) + " frames");
    // Every frame that could be decoded was processed; say what could not (exit 7).
    const ProfileReport report = profiler_.report();
    std::string damage;
    for (size_t s = 0; s < lanes_.size(); ++s) {
      std::optional<std::string> d = lanes_[s].source->damage();
      const int64_t corrupt = s < report.sources.size() ? report.sources[s].drops[static_cast<size_t>(DropReason::kCorrupt)] : 0;
      if (!d && corrupt > 0) d = lanes_[s].info.uri + ": " + std::to_string(corrupt) + " frames could not be decoded";
      if (d) damage += (damage.empty() ? "" : "; ") + *d;
    }
    if (!damage.empty()) return fail(ErrorCode::kDamagedSource, damage);
    return ok();
  }

  const RunOptions& options_;
  Profiler profiler_;
  Detector det_;
  std::vector<SourceLane> lanes_;
  std::unique_ptr<SharedJsonl> jsonl_;
  AtomicFile profile_file_, trace_file_;  // created at set-up: an unwritable path fails before the first frame
  std::unique_ptr<PacketPool> pool_;
  std::unique_ptr<FrameScheduler> scheduler_;
  std::unique_ptr<LiveView> view_;
  std::vector<std::unique_ptr<InferenceContext>> contexts_;
  int batch_ = 1;
  int workers_ = 1;  // options_.workers resolved (worker_plan.h)
  std::atomic<bool> abort_{false}, user_quit_{false};
  std::mutex error_mutex_;
  std::optional<Error> error_;
  std::atomic<int64_t> frames_done_{0};
};

Status Pipeline::setup() {
  nvtx_initialize();  // before any of our threads exist
  if (options_.sources.empty()) return fail(ErrorCode::kUsage, "no --source given");
  if (options_.workers < 0) return fail(ErrorCode::kUsage, "--workers must be 0 (auto) or more");
  if (options_.batch < 1) return fail(ErrorCode::kUsage, "--batch must be at least 1");
  if (options_.every < 1) return fail(ErrorCode::kUsage, "--every must be at least 1");
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
  for (int s = 0; s < n_sources; ++s) {
    SourceOptions so;
    so.source_id = s;
    so.decode_threads = decode_threads;
    SD_ASSIGN_OR_RETURN(auto source, open_source(options_.sources[static_cast<size_t>(s)], so));
    SourceLane lane;
    lane.info = source->info();
    lane.source = std::move(source);
    lane.policy = queue_policy_for(options_.policy, lane.info.live);
    largest.width = std::max(largest.width, lane.info.width);
    largest.height = std::max(largest.height, lane.info.height);
    lanes_.push_back(std::move(lane));
    profiler_.add_source(options_.sources[static_cast<size_t>(s)]);
  }

  // Inference threads are divided among the workers (worker_plan.h says how many by default).
  const bool any_live = std::any_of(lanes_.begin(), lanes_.end(), [](const SourceLane& l) { return l.info.live; });
  const WorkerPlan plan = plan_workers(options_.workers, options_.model.threads, cores, resolved_engine_name(options_.model), any_live);
  SD_TRY(check_thread_budget(plan, cores));
  workers_ = plan.workers;
  ModelOptions model = options_.model;
  model.threads = plan.threads_per_worker;
  // With several sources of different sizes, auto sizes the network for the largest one.
  SD_ASSIGN_OR_RETURN(det_, load_detector(model, largest));
  batch_ = options_.batch;
  if (batch_ > 1 && !det_.engine->capabilities().dynamic_batch)
    return fail(ErrorCode::kUsage, "--batch " + std::to_string(batch_) + ": model " + model.model +
                                       " has a fixed batch size of 1");
  log_info("model %s: engine %s (%d worker%s x %d thread%s), layout %s, %d classes, input %dx%d, preprocess %s", model.model.c_str(),
           det_.engine->name().c_str(), plan.workers, plan.workers == 1 ? "" : "s", plan.threads_per_worker,
           plan.threads_per_worker == 1 ? "" : "s", std::string(layout_name(det_.decoder->layout())).c_str(),
           det_.decoder->num_classes(), det_.input_size.width, det_.input_size.height, det_.preprocess.str().c_str());

  contexts_.push_back(std::move(det_.first_context));
  for (int w = 1; w < workers_; ++w) {
    SD_ASSIGN_OR_RETURN(auto ctx, det_.engine->create_context(context_options(model)));
    contexts_.push_back(std::move(ctx));
  }

  // Outputs are opened before the first frame, so that a bad path fails fast; the whole-file
  // ones first, since they leave nothing behind when a later one fails, the JSON Lines last.
  if (!options_.profile_json.empty()) {
    SD_ASSIGN_OR_RETURN(profile_file_, AtomicFile::create(options_.profile_json, "profile"));
  }
  if (!options_.trace.empty()) {
    SD_ASSIGN_OR_RETURN(trace_file_, AtomicFile::create(options_.trace, "trace"));
  }
  const size_t in_flight_per_source = 4;
  size_t pool_size = 2 * static_cast<size_t>(workers_ * batch_) + 2;
  std::vector<FrameScheduler::LaneConfig> lane_configs;
  for (int s = 0; s < n_sources; ++s) {
    SourceLane& lane = lanes_[static_cast<size_t>(s)];
    if (!options_.output.empty()) {
      std::string path = output_path_for_source(options_.output, s, lane.info.uri, n_sources);
      SD_ASSIGN_OR_RETURN(lane.video, VideoSink::open(path, lane.info.fps, lane.info.width, lane.info.height));
    }
    const size_t q = static_cast<size_t>(std::max(1, options_.queue));
    size_t raw_cap = lane.policy == QueuePolicy::kLatest ? 1 : (lane.policy == QueuePolicy::kBlock ? 2 : q);
    size_t sched_cap = lane.policy == QueuePolicy::kLatest
                           ? 1
                           : (lane.policy == QueuePolicy::kBlock ? static_cast<size_t>(workers_ * batch_) : q);
    lane.raw = std::make_unique<BoundedQueue<PacketPtr>>(raw_cap, lane.policy);
    lane_configs.push_back({lane.policy, sched_cap});
    pool_size += raw_cap + sched_cap + in_flight_per_source;
  }
  SD_TRY(check_memory_in_flight(pool_size, largest));
  if (!options_.detections.empty()) {
    std::vector<std::string> uris;
    for (const auto& l : lanes_) uris.push_back(l.info.uri);
    SD_ASSIGN_OR_RETURN(auto j, JsonlSink::open(options_.detections, uris, det_.class_names));
    jsonl_ = std::make_unique<SharedJsonl>(std::move(j));
  }
  pool_ = std::make_unique<PacketPool>(pool_size);
  for (auto& lane : lanes_) lane.done = std::make_unique<BoundedQueue<PacketPtr>>(pool_size, QueuePolicy::kBlock);
  scheduler_ = std::make_unique<FrameScheduler>(lane_configs);
  profiler_.set_workers(workers_);

  if (options_.show) {
    std::vector<std::string> names;
    for (const auto& l : lanes_) names.push_back("streamdet: " + l.info.uri);
    view_ = std::make_unique<LiveView>(names, det_.class_names);
  }
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
  const int n = static_cast<int>(options_.sources.size());
  std::error_code ec;
  for (const auto& s : options_.sources)
    if (std::filesystem::is_regular_file(s, ec)) inputs.push_back({"--source", s});
  if (!options_.output.empty())
    for (int s = 0; s < n; ++s)
      outputs.push_back({"-o", output_path_for_source(options_.output, s, options_.sources[static_cast<size_t>(s)], n)});
  if (!options_.detections.empty()) outputs.push_back({"-d", options_.detections});
  if (!options_.profile_json.empty()) outputs.push_back({"--profile-json", options_.profile_json});
  if (!options_.trace.empty()) outputs.push_back({"--trace", options_.trace});
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
    const auto& lane = *std::max_element(lanes_.begin(), lanes_.end(), [](const SourceLane& a, const SourceLane& b) {
      return static_cast<int64_t>(a.info.width) * a.info.height < static_cast<int64_t>(b.info.width) * b.info.height;
    });
    return fail(ErrorCode::kSource, "source " + lane.info.uri + ": " + std::to_string(packets) + " frames of " +
                                        std::to_string(largest_frame.width) + "x" + std::to_string(largest_frame.height) +
                                        " in flight need " + human_bytes(frames) + ", " + *over);
  }
  const uint64_t inputs = input_tensor_bytes(det_.input_size, 1) * packets +
                          (batch_ > 1 ? input_tensor_bytes(det_.input_size, batch_) * static_cast<uint64_t>(workers_) : 0);
  if (auto over = over_budget(frames + inputs, budget))
    return fail(ErrorCode::kModel, "model " + options_.model.model + ": the frames and network inputs in flight (" +
                                       std::to_string(packets) + " packets at " + std::to_string(det_.input_size.width) + "x" +
                                       std::to_string(det_.input_size.height) + ") need " + human_bytes(frames + inputs) + ", " +
                                       *over);
  return ok();
}

Status Pipeline::write_profile_json(const ProfileReport& profile) {
  {
    std::ofstream out(profile_file_.temp_path(), std::ios::trunc);
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
  profiler_.start();
  const int n_sources = static_cast<int>(lanes_.size());
  std::vector<std::thread> readers, preprocessors, workers, sinks;
  for (int s = 0; s < n_sources; ++s) {
    sinks.emplace_back([this, s] { guarded("sink", [&] { sink_loop(s); }); });
    preprocessors.emplace_back([this, s] { guarded("preprocess", [&] { preprocess_loop(s); }); });
    readers.emplace_back([this, s] { guarded("reader", [&] { reader_loop(s); }); });
  }
  for (int w = 0; w < static_cast<int>(contexts_.size()); ++w)
    workers.emplace_back([this, w] { guarded("worker", [&] { worker_loop(w, std::move(contexts_[static_cast<size_t>(w)])); }); });

  // The main thread shows the live view and the progress line until the readers are done.
  ProgressLine progress(!options_.quiet && !options_.show);
  int64_t total = 0;
  for (const auto& l : lanes_) {
    int64_t n = l.info.frame_count;
    if (options_.max_frames >= 0) n = n < 0 ? options_.max_frames : std::min(n, options_.max_frames);
    total = (n < 0 || total < 0) ? -1 : total + n;
  }
  std::atomic<int> readers_left{n_sources};
  std::thread joiner([&] {
    for (auto& t : readers) t.join();
    readers_left = 0;
  });
  while (readers_left > 0) {
    if (view_) {
      if (!view_->pump(15)) user_quit_ = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    progress.update(frames_done_, total);
  }
  joiner.join();
  for (auto& t : preprocessors) t.join();
  for (auto& t : workers) t.join();
  for (auto& l : lanes_) l.done->close();
  for (auto& t : sinks) t.join();
  progress.finish();

  // Finalize every output, also after an error or Ctrl-C, so what was done is kept.
  for (auto& l : lanes_) {
    if (l.video) {
      auto st = l.video->finish();
      if (!st) fail_run(st.error());
    }
  }
  if (jsonl_) {
    auto st = jsonl_->finish();
    if (!st) fail_run(st.error());
  }
  profiler_.stop();
  // Packets left in queues after an abort go back to the pool (and are counted).
  for (size_t s = 0; s < lanes_.size(); ++s)
    for ([[maybe_unused]] auto& p : lanes_[s].raw->drain()) profiler_.count_drop(static_cast<int>(s), DropReason::kAborted);
  for (auto& p : scheduler_->drain()) profiler_.count_drop(p->frame.source_id, DropReason::kAborted);
}

void Pipeline::reader_loop(int s) {
  SourceLane& lane = lanes_[static_cast<size_t>(s)];
  std::string name = "reader " + std::to_string(s);
  StageRecorder& rec = profiler_.make_recorder(name);
  nvtx_name_thread(name.c_str());
  int64_t read = 0, counter = 0;
  while (!stopping()) {
    if (options_.max_frames >= 0 && read >= options_.max_frames) break;
    auto t_acquire = Clock::now();
    PacketPtr p = pool_->acquire();
    if (!p) break;
    rec.add_blocked(Stage::kRead, ms_since(t_acquire));  // every packet in flight: back-pressure
    Result<bool> got;
    {
      NvtxRange range("read");
      auto t0 = Clock::now();
      got = lane.source->read(p->frame);
      // The end-of-stream read is not a frame: not counted as a hit.
      if (!got || *got) rec.add(Stage::kRead, t0, Clock::now(), 1, s, p->frame.index);
    }
    if (!got) {
      if (got.error().code == ErrorCode::kCorruptFrame) {
        profiler_.count_drop(s, DropReason::kCorrupt);
        rec.add_drop(Stage::kRead);
        log_warn("%s; skipped", got.error().message.c_str());
        pool_->release(std::move(p));
        continue;
      }
      pool_->release(std::move(p));
      fail_run(got.error());
      break;
    }
    if (!*got) {
      pool_->release(std::move(p));
      break;
    }
    ++read;
    profiler_.count_read(s);
    p->frame.source_id = s;
    p->left[static_cast<size_t>(Stage::kRead)] = Clock::now();
    if (view_) view_->post_frame(s, p->frame.bgr());
    if (options_.every > 1 && counter++ % options_.every != 0) {
      profiler_.count_drop(s, DropReason::kEvery);
      rec.add_drop(Stage::kRead);
      pool_->release(std::move(p));
      continue;
    }
    auto r = lane.raw->push(std::move(p));
    rec.add_blocked(Stage::kRead, r.blocked_ms);
    if (r.evicted) {
      profiler_.count_drop(s, DropReason::kPolicy);
      rec.add_drop(Stage::kRead);
      pool_->release(std::move(*r.evicted));
    }
    if (!r.accepted) break;
  }
  lane.raw->close();
}

void Pipeline::preprocess_loop(int s) {
  SourceLane& lane = lanes_[static_cast<size_t>(s)];
  std::string name = "preprocess " + std::to_string(s);
  StageRecorder& rec = profiler_.make_recorder(name);
  nvtx_name_thread(name.c_str());
  PreprocessScratch scratch;
  const Shape input_shape{1, 3, det_.input_size.height, det_.input_size.width};
  while (true) {
    auto t_wait = Clock::now();
    std::optional<PacketPtr> item = lane.raw->pop();
    rec.add_wait(Stage::kPreprocess, ms_since(t_wait));
    if (!item) break;
    PacketPtr p = std::move(*item);
    rec.add_items_in(Stage::kPreprocess, 1);
    {
      ScopedStage st(rec, Stage::kPreprocess, 1, s, p->frame.index);
      p->entered[static_cast<size_t>(Stage::kPreprocess)] = Clock::now();
      p->input.resize(input_shape);
      p->transform = preprocess_frame(p->frame, det_.input_size, det_.preprocess, p->input.data(), scratch);
      p->left[static_cast<size_t>(Stage::kPreprocess)] = Clock::now();
    }
    auto r = scheduler_->push(s, std::move(p));
    rec.add_blocked(Stage::kPreprocess, r.blocked_ms);
    if (r.evicted) {
      if (r.accepted) {
        profiler_.count_drop(s, DropReason::kPolicy);
        rec.add_drop(Stage::kPreprocess);
      }
      pool_->release(std::move(r.evicted));
    }
    if (!r.accepted) break;
  }
  scheduler_->finish_lane(s);
}

void Pipeline::worker_loop(int w, std::unique_ptr<InferenceContext> context) {
  std::string name = "worker " + std::to_string(w);
  StageRecorder& rec = profiler_.make_recorder(name);
  nvtx_name_thread(name.c_str());
  Postprocessor post(det_.decoder, det_.decode, det_.nms);
  std::vector<PacketPtr> batch, expired;
  batch.reserve(static_cast<size_t>(batch_));
  Tensor batch_input;
  std::vector<Tensor> outputs;
  std::vector<TensorView> views;
  const auto batch_wait = std::chrono::microseconds(static_cast<int64_t>(options_.batch_wait_ms * 1000));
  const auto max_age = std::chrono::microseconds(static_cast<int64_t>(options_.max_age_ms * 1000));
  while (true) {
    auto t_wait = Clock::now();
    bool more = scheduler_->pop_batch(static_cast<size_t>(batch_), batch_wait, max_age, batch, expired);
    rec.add_wait(Stage::kInference, ms_since(t_wait));
    if (!more) break;
    for (auto& p : expired) {
      profiler_.count_drop(p->frame.source_id, DropReason::kMaxAge);
      rec.add_drop(Stage::kInference);
      pool_->release(std::move(p));
    }
    if (batch.empty()) continue;
    const int n = static_cast<int>(batch.size());
    rec.add_items_in(Stage::kInference, n);
    TensorView input;
    if (n == 1) {
      input = batch[0]->input.view();
    } else {
      // Micro-batch: the frames' planes side by side in one NCHW tensor.
      const Shape& one = batch[0]->input.shape();
      batch_input.resize(Shape{n, one[1], one[2], one[3]});
      const int64_t per = one.numel();
      for (int i = 0; i < n; ++i)
        std::copy_n(batch[static_cast<size_t>(i)]->input.data(), per, batch_input.data() + i * per);
      input = batch_input.view();
    }
    Status st;
    {
      ScopedStage s(rec, Stage::kInference, n, batch[0]->frame.source_id, n == 1 ? batch[0]->frame.index : -1);
      for (auto& p : batch) p->entered[static_cast<size_t>(Stage::kInference)] = Clock::now();
      st = context->infer(input, outputs);
    }
    if (!st) {
      for (auto& p : batch) pool_->release(std::move(p));
      fail_run(st.error());
      break;
    }
    views.clear();
    for (const auto& t : outputs) views.push_back(t.view());
    for (int i = 0; i < n; ++i) {
      FramePacket& p = *batch[static_cast<size_t>(i)];
      ScopedStage s(rec, Stage::kPostprocess, 1, p.frame.source_id, p.frame.index);
      post.run(views, i, p.detections);
      for (Detection& d : p.detections) p.transform.map_back(d);
      p.left[static_cast<size_t>(Stage::kPostprocess)] = Clock::now();
    }
    for (auto& p : batch) {
      int s = p->frame.source_id;
      auto r = lanes_[static_cast<size_t>(s)].done->push(std::move(p));
      if (!r.accepted && r.evicted) pool_->release(std::move(*r.evicted));
    }
    batch.clear();
  }
}

Status Pipeline::write_outputs(int s, FramePacket& p, StageRecorder& rec) {
  SourceLane& lane = lanes_[static_cast<size_t>(s)];
  FrameResult result;
  if (view_) view_->post_detections(s, p.detections);
  if (lane.video) {
    ScopedStage st(rec, Stage::kDraw, 1, s, p.frame.index);
    draw_detections(p.frame.bgr(), p.detections, det_.class_names);
  }
  ScopedStage st(rec, Stage::kWrite, 1, s, p.frame.index);
  // FrameResult holds the frame by value; swap the packet's in and out to avoid copying pixels.
  std::swap(result.frame, p.frame);
  std::swap(result.detections, p.detections);
  // The JSON line first: when the video's write fails, the video is dropped anyway; when the
  // line's fails, the video stops at the same frame as the lines.
  Status status = ok();
  if (jsonl_) status = jsonl_->write(result);
  if (status && lane.video) status = lane.video->write(result);
  std::swap(result.frame, p.frame);
  std::swap(result.detections, p.detections);
  return status;
}

void Pipeline::sink_loop(int s) {
  SourceLane& lane = lanes_[static_cast<size_t>(s)];
  std::string name = "sink " + std::to_string(s);
  StageRecorder& rec = profiler_.make_recorder(name);
  nvtx_name_thread(name.c_str());
  ReorderBuffer reorder(pool_->size());
  while (true) {
    auto t_wait = Clock::now();
    std::optional<PacketPtr> item = lane.done->pop();
    rec.add_wait(Stage::kDraw, ms_since(t_wait));
    if (!item) break;
    rec.add_items_in(Stage::kDraw, 1);
    reorder.put(std::move(*item));
    while (PacketPtr p = reorder.take_next()) {
      if (!abort_) {
        auto st = write_outputs(s, *p, rec);
        if (!st) {
          pool_->release(std::move(p));
          fail_run(st.error());
          break;
        }
        rec.add_frame_latency(ms_since(p->frame.capture_time));
        profiler_.count_frame_done(s);
        ++frames_done_;
      }
      pool_->release(std::move(p));
    }
  }
  for (auto& p : reorder.release_all()) {
    profiler_.count_drop(s, DropReason::kAborted);
    pool_->release(std::move(p));
  }
}

}  // namespace

RunOutcome run_detection(const RunOptions& options) {
  Pipeline pipeline(options);
  return pipeline.run();
}

}  // namespace sd
