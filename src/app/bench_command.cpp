#include "app/bench_command.h"
#include "app/option_checks.h"
#include "core/cpu_isa.h"

#include <sys/resource.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/build_info.h"
#include "core/frame.h"
#include "core/uri_redaction.h"
#include "engine/engine_registry.h"
#include "model/model_info.h"
#include "runtime/detector.h"
#include "runtime/pipeline.h"
#include "runtime/worker_plan.h"
#include "sources/source.h"

namespace sd {

void add_bench_options(CLI::App& cmd, BenchOptions& o) {
  cmd.add_option("-s,--source", o.sources, "also run the full pipeline on this source (repeatable)");
  cmd.add_option("--warmup", o.warmup, "untimed engine iterations first")->capture_default_str()->check(integer_in(0, 100000));
  cmd.add_option("--iterations,-n", o.iterations, "timed engine iterations")->capture_default_str()->check(integer_in(1, 1000000));
  cmd.add_option("--batch", o.run.batch, "images per inference call")->capture_default_str()->check(integer_in(1, kMaxBatch));
  // The engine-only run and the pipeline run use one worker plan, the one `run` makes by default
  // (0: auto, runtime/worker_plan.h), so that bench measures what run does.
  cmd.add_option("--workers", o.run.workers, "inference workers of the engine-only and the pipeline run; 0: auto, as `run` plans them")
      ->capture_default_str()
      ->check(integer_in(0, kMaxWorkers));
  cmd.add_option("--frames,--max-frames", o.run.max_frames, "read at most N frames of each source in the pipeline run (-1: all)")
      ->capture_default_str()
      ->check(integer_in(-1, INT64_MAX));
  cmd.add_option("-d,--detections", o.run.detections, "write JSONL in the pipeline run (part of the measured work)");
  cmd.add_option("-o,--output", o.run.output, "write the annotated video in the pipeline run (its encoding is reported apart)");
  cmd.add_option("--sweep", o.sweep,
                 "run every combination, e.g. --sweep workers=1,2,4 batch=1,4 input-size=640,auto threads=1,2")
      ->expected(1, 16);
  cmd.add_flag("--json", o.json, "one JSON object per row instead of a table");
}

namespace {

struct LatencyStats {
  double min = 0, median = 0, p90 = 0, p99 = 0;
};

LatencyStats stats_of(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto q = [&](double p) {
    auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(ms.size())));
    return ms[std::min(ms.size() - 1, rank == 0 ? 0 : rank - 1)];
  };
  return {ms.front(), q(0.5), q(0.9), q(0.99)};
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Row {
  std::map<std::string, std::string> params;  // the sweep values of this row
  BenchOptions options;
  std::string engine, device, input_size;
  LatencyStats engine_ms;
  double engine_fps = 0;
  double load_ms = 0;  // model load: parse, graph passes, first plan (what a user waits for at start)
  int workers = 1, threads_per_worker = 1;  // the plan both runs used
  bool has_pipeline = false;
  double inference_ms_in_pipeline = 0;  // the same calls inside the pipeline, sharing the cores with the other stages
  double e2e_fps = 0, cpu_percent = 0, write_ms_per_frame = 0, draw_ms_per_frame = 0;
  LatencyStats e2e_ms;  // capture -> output (min holds p50 for lack of a min)
  std::string verdict;
};

// Engine alone, the way the pipeline will run it: `workers` contexts over one loaded model, the
// threads divided among them as the pipeline divides them, all inferring at once on a fixed
// input (no source, no other stage). engine_fps is then the throughput the pipeline's end-to-end
// FPS is measured against, like for like; latencies are per call.
Status time_engine(Row& row) {
  const BenchOptions& o = row.options;
  const WorkerPlan plan =
      plan_workers(o.run.workers, o.model.threads, std::max(1, cpu_count()), resolved_engine_name(o.model), o.live_source);
  SD_TRY(check_thread_budget(plan, std::max(1, cpu_count())));
  const int workers = plan.workers;
  row.workers = plan.workers;
  row.threads_per_worker = plan.threads_per_worker;
  ModelOptions model = o.model;
  model.threads = plan.threads_per_worker;
  auto load_start = Clock::now();
  SD_ASSIGN_OR_RETURN(Detector det, load_detector(model, cv::Size(o.frame_width, o.frame_height)));
  row.load_ms = std::chrono::duration<double, std::milli>(Clock::now() - load_start).count();
  if (o.run.batch > 1 && !det.engine->capabilities().dynamic_batch)
    return fail(ErrorCode::kUsage, "--batch " + std::to_string(o.run.batch) + ": model " + o.model.model +
                                       " has a fixed batch size of 1");
  std::vector<std::unique_ptr<InferenceContext>> contexts;
  contexts.push_back(std::move(det.first_context));
  for (int w = 1; w < workers; ++w) {
    SD_ASSIGN_OR_RETURN(auto ctx, det.engine->create_context(context_options(model)));
    contexts.push_back(std::move(ctx));
  }
  Tensor input(Shape{o.run.batch, 3, det.input_size.height, det.input_size.width});
  std::fill_n(input.data(), input.numel(), 0.5f);
  std::vector<std::vector<double>> ms(static_cast<size_t>(workers));
  std::vector<Status> status(static_cast<size_t>(workers), ok());
  // Every context warms up, then all start the timed calls together.
  std::barrier start_line(workers);
  Clock::time_point timed_start;
  auto work = [&](int w) {
    auto& ctx = *contexts[static_cast<size_t>(w)];
    Status& st = status[static_cast<size_t>(w)];
    std::vector<Tensor> outputs;
    for (int i = 0; i < o.warmup && st; ++i) st = ctx.infer(input.view(), outputs);
    start_line.arrive_and_wait();
    if (w == 0) timed_start = Clock::now();
    for (int i = 0; i < o.iterations && st; ++i) {
      auto t0 = Clock::now();
      st = ctx.infer(input.view(), outputs);
      ms[static_cast<size_t>(w)].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) threads.emplace_back(work, w);
  work(0);
  for (auto& t : threads) t.join();
  const double timed_ms = std::chrono::duration<double, std::milli>(Clock::now() - timed_start).count();
  for (const Status& st : status) SD_TRY(st);
  std::vector<double> all;
  for (const auto& m : ms) all.insert(all.end(), m.begin(), m.end());
  row.engine_ms = stats_of(all);
  // One context: the median call. Several: the calls completed per second of the timed window.
  if (workers == 1)
    row.engine_fps = row.engine_ms.median > 0 ? 1000.0 * o.run.batch / row.engine_ms.median : 0;
  else
    row.engine_fps = timed_ms > 0 ? 1000.0 * o.run.batch * static_cast<double>(all.size()) / timed_ms : 0;
  row.engine = det.engine->name();
  row.device = det.engine->capabilities().device;
  row.input_size = std::to_string(det.input_size.width) + "x" + std::to_string(det.input_size.height);
  return ok();
}

// What sharing the cores costs inference: its median call inside the pipeline against alone,
// said when it is more than 10% slower there ("" otherwise).
std::string sharing_cost(double alone_ms, double in_pipeline_ms) {
  if (alone_ms <= 0 || in_pipeline_ms <= 1.1 * alone_ms) return "";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "; inference takes %.2f ms a call in the pipeline against %.2f ms alone (+%.0f%%): decoding and the other "
                "stages take CPU from it",
                in_pipeline_ms, alone_ms, 100.0 * (in_pipeline_ms / alone_ms - 1.0));
  return buf;
}

Status run_pipeline(Row& row) {
  RunOptions run = row.options.run;
  run.model = row.options.model;
  run.workers = row.workers;  // the plan the engine-only run used (auto resolves the same way)
  run.sources = row.options.sources;
  run.quiet = true;
  double cpu0 = cpu_seconds();
  RunOutcome out = run_detection(run);
  double cpu = cpu_seconds() - cpu0;
  if (!out.status) return out.status;
  const ProfileReport& p = out.profile;
  row.has_pipeline = true;
  row.e2e_fps = p.e2e_fps;
  row.e2e_ms = {p.latency_p50_ms, p.latency_p50_ms, p.latency_p90_ms, p.latency_p99_ms};
  row.cpu_percent = p.wall_ms > 0 ? 100.0 * cpu * 1000.0 / p.wall_ms : 0;
  const auto& write = p.stages[static_cast<size_t>(Stage::kWrite)];
  const auto& draw = p.stages[static_cast<size_t>(Stage::kDraw)];
  row.write_ms_per_frame = write.per_hit_ms;
  row.draw_ms_per_frame = draw.per_hit_ms;
  row.inference_ms_in_pipeline = p.stages[static_cast<size_t>(Stage::kInference)].p50_ms;
  row.verdict = p.verdict + sharing_cost(row.engine_ms.median, row.inference_ms_in_pipeline);
  return ok();
}

// "workers=1,2" "batch=1,4" ... -> every combination, in the order given.
Result<std::vector<std::map<std::string, std::string>>> expand_sweep(const std::vector<std::string>& specs) {
  std::vector<std::map<std::string, std::string>> rows(1);
  for (const auto& spec : specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return fail(ErrorCode::kUsage, "--sweep '" + spec + "': expected key=v1,v2,...");
    std::string key = spec.substr(0, eq);
    if (key != "workers" && key != "batch" && key != "input-size" && key != "threads")
      return fail(ErrorCode::kUsage, "--sweep key '" + key + "' (known: workers, batch, input-size, threads)");
    std::vector<std::string> values;
    std::stringstream ss(spec.substr(eq + 1));
    std::string v;
    // Values are comma-separated, but an input size W,H uses a comma too: write it WxH.
    while (std::getline(ss, v, ',')) values.push_back(v);
    std::vector<std::map<std::string, std::string>> next;
    for (const auto& r : rows)
      for (const auto& value : values) {
        auto copy = r;
        copy[key] = value;
        next.push_back(copy);
      }
    rows = std::move(next);
  }
  return rows;
}

Status apply_params(const std::map<std::string, std::string>& params, BenchOptions& o) {
  // The same limits as the options themselves (option_checks.h).
  auto whole = [](const std::string& key, const std::string& v, int64_t lo, int64_t hi) -> Result<int> {
    auto n = parse_integer(v);
    if (!n || *n < lo || *n > hi)
      return fail(ErrorCode::kUsage, "--sweep " + key + "=" + v + ": must be a whole number from " + std::to_string(lo) + " to " +
                                         std::to_string(hi));
    return static_cast<int>(*n);
  };
  for (const auto& [k, v] : params) {
    if (k == "workers") {
      SD_ASSIGN_OR_RETURN(o.run.workers, whole(k, v, 1, kMaxWorkers));
    } else if (k == "batch") {
      SD_ASSIGN_OR_RETURN(o.run.batch, whole(k, v, 1, kMaxBatch));
    } else if (k == "threads") {
      SD_ASSIGN_OR_RETURN(o.model.threads, whole(k, v, 0, kMaxThreads));
    } else if (k == "input-size") {
      o.model.input_size = v;
    }
  }
  return ok();
}

nlohmann::json row_json(const Row& r) {
  const BenchOptions& o = r.options;
  nlohmann::json j = {{"model", o.model.model},
                      {"engine", r.engine},
                      {"device", r.device},
                      {"threads", o.model.threads > 0 ? o.model.threads : r.workers * r.threads_per_worker},
                      {"workers", r.workers},
                      {"batch", o.run.batch},
                      {"input_size", r.input_size},
                      {"engine_latency_ms",
                       {{"min", r.engine_ms.min}, {"median", r.engine_ms.median}, {"p90", r.engine_ms.p90}, {"p99", r.engine_ms.p99}}},
                      {"engine_fps", r.engine_fps},
                      {"load_ms", r.load_ms},
                      {"commit", build_commit()},
                      {"machine", machine_summary()},
                      {"cpu_isa", {{"kernels", cpu::isa_name(cpu::active_isa())}, {"onednn", cpu::onednn_isa_name()}}}};
  if (r.has_pipeline) {
    std::vector<std::string> shown;
    for (const auto& s : o.sources) shown.push_back(without_password(s));
    j["source"] = shown.size() == 1 ? nlohmann::json(shown[0]) : nlohmann::json(shown);
    j["e2e_fps"] = r.e2e_fps;
    j["e2e_over_engine"] = r.engine_fps > 0 ? r.e2e_fps / r.engine_fps : 0;
    j["inference_ms_in_pipeline"] = r.inference_ms_in_pipeline;
    j["e2e_latency_ms"] = {{"median", r.e2e_ms.median}, {"p90", r.e2e_ms.p90}, {"p99", r.e2e_ms.p99}};
    j["cpu_percent"] = r.cpu_percent;
    j["write_ms_per_frame"] = r.write_ms_per_frame;
    j["verdict"] = r.verdict;
  }
  return j;
}

void print_table(const std::vector<Row>& rows) {
  const bool pipeline = !rows.empty() && rows[0].has_pipeline;
  std::printf("streamdet bench: %s, engine %s, device %s | commit %s | %s | ISA: %s\n\n", rows[0].options.model.model.c_str(),
              rows[0].engine.c_str(), rows[0].device.c_str(), build_commit(), machine_summary().c_str(), cpu::isa_summary().c_str());
  std::printf("| threads | workers | batch | input | load ms | engine ms (min / median / p90 / p99) | engine FPS |");
  if (pipeline) std::printf(" e2e FPS | e2e / engine | inference ms in pipeline | latency ms (p50 / p90 / p99) | CPU %% | write ms/frame |");
  std::printf("\n|---|---|---|---|---|---|---|");
  if (pipeline) std::printf("---|---|---|---|---|---|");
  std::printf("\n");
  for (const Row& r : rows) {
    const BenchOptions& o = r.options;
    std::printf("| %d | %d | %d | %s | %.1f | %.2f / %.2f / %.2f / %.2f | %.2f |",
                o.model.threads > 0 ? o.model.threads : r.workers * r.threads_per_worker, r.workers,
                o.run.batch, r.input_size.c_str(), r.load_ms, r.engine_ms.min, r.engine_ms.median, r.engine_ms.p90, r.engine_ms.p99, r.engine_fps);
    if (pipeline)
      std::printf(" %.2f | %.3f | %.2f | %.1f / %.1f / %.1f | %.0f | %.2f |", r.e2e_fps, r.engine_fps > 0 ? r.e2e_fps / r.engine_fps : 0,
                  r.inference_ms_in_pipeline, r.e2e_ms.median, r.e2e_ms.p90, r.e2e_ms.p99, r.cpu_percent, r.write_ms_per_frame);
    std::printf("\n");
  }
  if (pipeline && rows.size() == 1) std::printf("\n%s\n", rows[0].verdict.c_str());
}

// "batch=4 workers=2": a sweep row as the user wrote its values.
std::string describe_params(const std::map<std::string, std::string>& params) {
  std::string s;
  for (const auto& [k, v] : params) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

// Every row's options, checked before the first is measured: a sweep that cannot run one of its
// combinations (a batch a fixed-batch model refuses, an input size a fixed-size model does not
// have, a thread plan over the budget) is refused at once, exit 2, not after minutes of
// measuring the others (docs/errors.md: usage errors come before anything runs).
Result<std::vector<Row>> plan_rows(const BenchOptions& options) {
  SD_ASSIGN_OR_RETURN(auto combos, expand_sweep(options.sweep));
  BenchOptions base = options;
  if (!options.sources.empty() && base.frame_width == 0) {
    // Size and plan the engine-only run like the pipeline will: for the source's frames, and
    // for a live source as `run` plans one.
    auto src = open_source(options.sources[0]);
    if (!src) return tl::unexpected(src.error());
    base.frame_width = (*src)->info().width;
    base.frame_height = (*src)->info().height;
    base.live_source = (*src)->info().live;
  }
  std::vector<Row> rows;
  for (const auto& params : combos) {
    Row row;
    row.params = params;
    row.options = base;
    SD_TRY(apply_params(params, row.options));
    rows.push_back(std::move(row));
  }
  // The model's capabilities, from one load without inference (the rows load it again each).
  SD_ASSIGN_OR_RETURN(ModelInfo model, inspect_model(options.model.model, options.model.weights));
  EngineOptions engine_options;
  engine_options.device = options.model.device;
  engine_options.precision = options.model.precision;
  engine_options.cuda_graphs = options.model.cuda_graphs;
  SD_ASSIGN_OR_RETURN(auto engine, load_engine(resolved_engine_name(options.model), model, engine_options));
  const int cores = std::max(1, cpu_count());
  for (const Row& row : rows) {
    const BenchOptions& o = row.options;
    const std::string where = combos.size() > 1 ? " (--sweep row " + describe_params(row.params) + ")" : "";
    if (o.run.batch > 1 && !engine->capabilities().dynamic_batch)
      return fail(ErrorCode::kUsage, "--batch " + std::to_string(o.run.batch) + where + ": model " + o.model.model +
                                         " has a fixed batch size of 1 (export it with a dynamic batch axis)");
    if (auto size = resolve_input_size(o.model.input_size, *engine, model, cv::Size(o.frame_width, o.frame_height)); !size)
      return tl::unexpected(with_context(size.error(), "bench" + where));
    const WorkerPlan plan =
        plan_workers(o.run.workers, o.model.threads, cores, resolved_engine_name(o.model), o.live_source);
    if (auto st = check_thread_budget(plan, cores); !st) return tl::unexpected(with_context(st.error(), "bench" + where));
  }
  return rows;
}

}  // namespace

Status run_bench(const BenchOptions& options) {
  SD_ASSIGN_OR_RETURN(std::vector<Row> rows, plan_rows(options));
  for (size_t i = 0; i < rows.size(); ++i) {
    Row& row = rows[i];
    Status st = time_engine(row);
    if (st && !options.sources.empty()) st = run_pipeline(row);
    if (!st) {
      // What could not be foreseen (a failure while measuring): the rows measured are kept.
      if (!options.json && i > 0) {
        rows.resize(i);
        print_table(rows);
      }
      return st;
    }
    if (options.json) {
      std::printf("%s\n", row_json(row).dump().c_str());
      std::fflush(stdout);
    }
  }
  if (!options.json) print_table(rows);
  return ok();
}

}  // namespace sd
