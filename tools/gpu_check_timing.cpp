#include "gpu_check_timing.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "engine/native/cuda/cuda_backend.h"
#include "engine/native/half.h"
#include "engine/native/session.h"

namespace sd::gpu_check {
namespace {

using nlohmann::json;
using namespace sd::native;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// fp16 against fp32, and an fp16 batch against fp16 batch 1: the whole model's tolerance in fp16
// (1e-2 of the largest |output|, docs/gpu.md "fp16").
constexpr double kFp16ModelTolerance = 1e-2;

// The q-quantile (nearest rank), as the rest of the check reports it.
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// The same image in every slot of the batch.
HostTensor batch_of(const HostTensor& image, int batch) {
  Shape s = image.shape();
  s[0] = batch;
  HostTensor x(DType::kFloat32, s);
  for (int b = 0; b < batch; ++b) std::memcpy(x.as<float>() + b * image.numel(), image.data(), image.bytes());
  return x;
}

// The largest |got - want| over every slot of got's batch against the batch-1 outputs `want`,
// relative to the largest |want|; nullopt (and `why`) when the outputs do not line up or are not finite.
std::optional<double> disagreement(const std::vector<HostTensor>& got, const std::vector<HostTensor>& want, int batch, std::string& why) {
  if (got.size() != want.size()) return why = "output count differs from batch 1's", std::nullopt;
  double max_diff = 0, max_ref = 0;
  for (size_t o = 0; o < got.size(); ++o) {
    if (got[o].dtype() != DType::kFloat32 || want[o].dtype() != DType::kFloat32 || got[o].numel() != want[o].numel() * batch)
      return why = "output " + std::to_string(o) + " is " + got[o].shape().str() + " where batch 1 gives " + want[o].shape().str(), std::nullopt;
    const int64_t slot = want[o].numel();
    for (int64_t i = 0; i < got[o].numel(); ++i) {
      const double a = got[o].as<float>()[i], r = want[o].as<float>()[i % slot];
      if (!std::isfinite(a)) return why = "non-finite outputs", std::nullopt;
      max_diff = std::max(max_diff, std::fabs(a - r));
      max_ref = std::max(max_ref, std::fabs(r));
    }
  }
  return max_ref > 0 ? max_diff / max_ref : max_diff;
}

struct Row {
  int batch = 1;
  bool graphs = true;
  // Against the batch-1 outputs with graphs (nullptr: this row makes them), within `tolerance`.
  const std::vector<HostTensor>* reference = nullptr;
  double tolerance = 1e-3;
  const char* compared = nullptr;  // the JSON field of the comparison
  int workers = 1;                 // sessions running at once, each on its own thread
  // The input written on the device before each run (NativeSession::device_input, a device copy
  // outside the timed run) and every output left there: the run without its upload and
  // downloads, as with --preprocess-on gpu and --postprocess-on gpu. Where the input cannot be
  // bound (the CPU) the row runs as the others and says why.
  bool on_device = false;
  bool fp16 = false;  // the device's tensors in fp16 (SessionOptions::device_fp16, the GPU's default)
  // Its sessions planned with cuDNN's graph engine off (the legacy engine alone), beside the same
  // row with it: GPU run 5 saw float32 graph plans each faster alone and the model twice as slow,
  // so the whole model is timed both ways.
  bool legacy_conv = false;
};

// One worker of a row: its session, its input (in the session's staging where it has one), its
// outputs and its timed runs.
struct Worker {
  std::unique_ptr<NativeSession> session;
  TensorRef input;
  NativeSession::RunOptions options;
  void* device_input = nullptr;  // Row::on_device: where the run reads its input on the device
  DeviceBuffer device_copy;      // the input in device memory, copied there before each run
  std::vector<HostTensor> outputs;
  std::vector<double> ms;
  std::string error;
};

// Row::on_device: the input copied where the run reads it (the run's arena reuses those bytes
// once the input is read, so before every run), synchronously, outside the timed run.
Status put_input(const Worker& w, const Backend* gpu) {
  if (!w.device_input) return ok();
  return gpu->copy(w.device_input, gpu->device(), w.device_copy.data(), gpu->device(), w.device_copy.bytes(), nullptr);
}

json measure(const TimingOptions& o, const std::shared_ptr<const NativeModel>& model, const std::shared_ptr<const Backend>& gpu,
             const HostTensor& image, const Row& r, Clock::time_point deadline, std::vector<HostTensor>& outputs) {
  json row{{"model", o.name}, {"path", o.model}, {"precision", r.fp16 ? "fp16" : "fp32"}, {"batch", r.batch},
           {"input", std::to_string(o.width) + "x" + std::to_string(o.height)}, {"cuda_graphs", r.graphs}, {"pass", false},
           {"error", nullptr}};
  if (r.workers > 1) row["workers"] = r.workers;
  if (Clock::now() >= deadline) return row.update({{"error", "skipped: the timing budget of " + std::to_string(static_cast<int>(o.budget_seconds)) + " s is spent"}}), row;
  SessionOptions so;
  so.threads = o.threads;
  so.cuda_graphs = r.graphs;
  if (gpu) so.backends = {gpu};
  so.device_fp16 = r.fp16;
  const HostTensor x = batch_of(image, r.batch);
  std::vector<Worker> workers(static_cast<size_t>(std::max(1, r.workers)));
  const auto t_first = Clock::now();
  for (Worker& w : workers) {
    auto session = NativeSession::create(model, so);
    if (!session) return row.update({{"error", session.error().message}}), row;
    w.session = std::move(*session);
    w.input = x.ref();
    // Written once into the session's page-locked staging where it has one (a GPU): each run
    // then uploads from there, as a preprocess writing into it would, without a host copy first.
    auto staging = w.session->input_staging(0, x.bytes());
    if (!staging) return row.update({{"error", staging.error().message}}), row;
    if (*staging) {
      std::memcpy(*staging, x.data(), x.bytes());
      w.input.data = *staging;
    }
    row["input_staged"] = *staging != nullptr;
    if (r.on_device) {
      auto at = w.session->device_input(0, {x.shape()});
      if (!at) return row.update({{"error", at.error().message}}), row;
      if (gpu && at->data && (at->dtype == DType::kFloat32 || at->dtype == DType::kFloat16)) {
        // In the dtype the plan reads its input in (fp16 where the plan is, as the letterbox writes it).
        std::vector<uint16_t> halves;
        const void* src = x.data();
        size_t bytes = x.bytes();
        if (at->dtype == DType::kFloat16) {
          halves.resize(static_cast<size_t>(x.numel()));
          floats_to_halves(x.as<float>(), halves.data(), halves.size());
          src = halves.data(), bytes = halves.size() * sizeof(uint16_t);
        }
        auto buf = gpu->allocate(bytes);
        if (!buf) return row.update({{"error", buf.error().message}}), row;
        if (auto st = gpu->copy(buf->data(), gpu->device(), src, Device{}, bytes, nullptr); !st)
          return row.update({{"error", st.error().message}}), row;
        w.device_copy = std::move(*buf);
        w.device_input = at->data;
        w.options.inputs_on_device = 1;
        w.options.outputs_on_device = ~uint64_t{0};
      } else {
        row["on_device_why_not"] = at->data ? std::string("the plan's input is ") + dtype_name(at->dtype) : at->why_not;
      }
      row["on_device"] = w.device_input != nullptr;
    }
    // Warm-up: the first run plans (and probes cuDNN) and launches one by one, the second
    // records the graph, the third replays it.
    for (int i = 0; i < 3; ++i) {
      if (auto st = put_input(w, gpu.get()); !st) return row.update({{"error", st.error().message}}), row;
      if (auto st = w.session->run(std::span<const TensorRef>(&w.input, 1), w.outputs, w.options); !st) return row.update({{"error", st.error().message}}), row;
      if (i == 0 && &w == &workers[0]) row["first_run_ms"] = ms_since(t_first);
    }
  }
  const Backend& counted = gpu ? *gpu : *cpu_backend();
  const BackendCounters before = counted.counters();
  auto t_rows = Clock::now();
  std::atomic<int> ready{0};
  std::atomic<bool> go{workers.size() == 1};
  auto timed_runs = [&](Worker& w) {
    ++ready;
    while (!go.load()) std::this_thread::yield();  // the workers start together
    while (static_cast<int>(w.ms.size()) < std::max(3, o.iters) &&
           (w.ms.size() < 3 || (ms_since(t_rows) < o.row_seconds * 1000 && Clock::now() < deadline))) {
      if (auto st = put_input(w, gpu.get()); !st) {
        w.error = st.error().message;
        return;
      }
      const auto t0 = Clock::now();
      if (auto st = w.session->run(std::span<const TensorRef>(&w.input, 1), w.outputs, w.options); !st) {
        w.error = st.error().message;
        return;
      }
      w.ms.push_back(ms_since(t0));
    }
    // The outputs left on the device, brought to the host for the comparison (the skipped copies, now).
    if (w.options.outputs_on_device)
      for (size_t i = 0; i < w.outputs.size() && w.error.empty(); ++i)
        if (auto st = w.session->output_to_host(i, w.outputs[i]); !st) w.error = st.error().message;
  };
  if (workers.size() == 1) {
    timed_runs(workers[0]);
  } else {
    // Each on its own thread and stream: one worker's copies overlap another's kernels.
    std::vector<std::thread> threads;
    for (Worker& w : workers) threads.emplace_back(timed_runs, std::ref(w));
    while (ready.load() < static_cast<int>(workers.size())) std::this_thread::yield();
    t_rows = Clock::now();
    go = true;
    for (auto& t : threads) t.join();
  }
  const double wall_ms = ms_since(t_rows);
  const BackendCounters after = counted.counters();
  std::vector<double> ms;
  for (const Worker& w : workers) {
    if (!w.error.empty()) return row.update({{"error", w.error}}), row;
    ms.insert(ms.end(), w.ms.begin(), w.ms.end());
  }
  const double med = quantile(ms, 0.5);
  row["latency_ms"] = {{"median", med}, {"p90", quantile(ms, 0.9)}, {"min", *std::min_element(ms.begin(), ms.end())}};
  // One worker: batch / median. Several: every image they ran over the wall time.
  if (workers.size() == 1) row["images_per_s"] = med > 0 ? r.batch * 1000.0 / med : 0.0;
  else row["images_per_s"] = wall_ms > 0 ? static_cast<double>(r.batch) * static_cast<double>(ms.size()) * 1000.0 / wall_ms : 0.0;
  row["runs"] = ms.size();
  // What the timed runs made: nothing, on the GPU (no cudaMalloc, cudaHostAlloc, stream or recording).
  row["steady_state"] = {{"allocations", after.allocations - before.allocations},
                         {"host_allocations", after.host_allocations - before.host_allocations},
                         {"streams", after.streams - before.streams},
                         {"graph_captures", after.graph_captures - before.graph_captures},
                         {"graph_launches", after.graph_launches - before.graph_launches}};
  // After the runs: a failed recording says so.
  if (auto summary = workers[0].session->plan_summary({x.shape()})) {
    row["graph"] = summary->graph;
    // What the device's float tensors were stored as ("float16" in an fp16 row on a GPU; the
    // CPU keeps float32 whatever the row asks).
    row["device_float"] = summary->backends.empty() ? "float32" : summary->backends[0].precision;
  }
  std::string why;
  if (after.allocations != before.allocations || after.host_allocations != before.host_allocations || after.streams != before.streams ||
      after.graph_captures != before.graph_captures)
    why = "the timed runs allocated, created a stream or recorded again";
  for (const Worker& w : workers) {
    std::string bad;
    if (r.reference) {
      auto d = disagreement(w.outputs, *r.reference, r.batch, bad);
      const double prev = row.contains(r.compared) && row[r.compared].is_number() ? row[r.compared].get<double>() : 0.0;
      row[r.compared] = d ? json(std::max(prev, *d)) : json(nullptr);
      if (!d) why = bad;
      else if (*d > r.tolerance) why = std::string(r.compared) + " above " + json(r.tolerance).dump();
    } else if (!disagreement(w.outputs, w.outputs, 1, bad)) {
      why = bad;  // finite, at least
    }
  }
  outputs = std::move(workers[0].outputs);
  row["pass"] = why.empty();
  if (!why.empty()) row["error"] = why;
  return row;
}

// The engine profile of one batch (TimingOptions::profile_batches): printed on stderr when the
// session ends; a failure is said there too, and counts for nothing (the rows are the check).
void profile(const TimingOptions& o, const std::shared_ptr<const NativeModel>& model, const std::shared_ptr<const Backend>& gpu,
             const HostTensor& image, int batch, bool fp16) {
  SessionOptions so;
  so.threads = o.threads;
  if (gpu) so.backends = {gpu};
  so.device_fp16 = fp16;
  so.profile_rows = 40;
  std::fprintf(stderr, "profile %s %s batch %d, %d runs after the first:\n", o.name.c_str(), fp16 ? "fp16" : "fp32", batch, o.profile_runs);
  auto session = NativeSession::create(model, so);
  if (!session) {
    std::fprintf(stderr, "profile: %s\n", session.error().message.c_str());
    return;
  }
  const HostTensor x = batch_of(image, batch);
  const TensorRef ref = x.ref();
  std::vector<HostTensor> out;
  for (int i = 0; i <= o.profile_runs; ++i)
    if (auto st = (*session)->run(std::span<const TensorRef>(&ref, 1), out); !st) {
      std::fprintf(stderr, "profile: %s\n", st.error().message.c_str());
      return;
    }
}

}  // namespace

int run_timing(const TimingOptions& options, const std::shared_ptr<const Backend>& gpu, const std::function<void(const json&)>& emit) {
  TimingOptions o = options;
  if (o.name.empty()) {
    const size_t slash = o.model.find_last_of('/');
    o.name = o.model.substr(slash == std::string::npos ? 0 : slash + 1);
    if (const size_t dot = o.name.rfind(".onnx"); dot != std::string::npos) o.name.resize(dot);
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.budget_seconds * 1000));
  int failed = 0;
  auto model = NativeModel::load(o.model);
  if (!model) {
    emit(json{{"model", o.name}, {"path", o.model}, {"pass", false}, {"error", model.error().message}});
    return 1;
  }
  HostTensor image(DType::kFloat32, Shape{1, o.channels, o.height, o.width});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.f, 1.f);  // an image's range after normalization
  for (int64_t i = 0; i < image.numel(); ++i) image.as<float>()[i] = u(rng);

  auto wants = [&](const char* p) { return std::find(o.precisions.begin(), o.precisions.end(), p) != o.precisions.end(); };
  const bool primary16 = !o.precisions.empty() && o.precisions.front() == "fp16";
  // The reference outputs of batch 1 with graphs, per precision (empty: that row did not run).
  std::vector<HostTensor> ref32, ref16, scratch;
  std::optional<double> graph_ms[2];  // batch 1 with graphs, per precision (fp32, fp16)
  // The graph engine's rows' medians, by batch, for their legacy twins' ratio.
  std::map<int, double> graph_engine_ms;
  auto run_row = [&](const Row& r, std::vector<HostTensor>& keep) {
    const double cap = native::cuda_conv_graph_planning_budget();
    if (r.legacy_conv) native::set_cuda_conv_graph_planning_budget(0);
    json row = measure(o, *model, gpu, image, r, deadline, keep);
    if (r.legacy_conv) native::set_cuda_conv_graph_planning_budget(cap);
    if (r.legacy_conv) row["cudnn_graph"] = false;
    if (r.legacy_conv && row.contains("latency_ms") && graph_engine_ms.count(r.batch))
      row["graph_engine_speedup"] = row["latency_ms"]["median"].get<double>() / graph_engine_ms[r.batch];  // legacy / graph median
    if (!r.legacy_conv && r.on_device && row.contains("latency_ms")) graph_engine_ms[r.batch] = row["latency_ms"]["median"].get<double>();
    std::optional<double>& g = graph_ms[r.fp16 ? 1 : 0];
    if (!r.graphs && g && row.contains("latency_ms") && *g > 0)
      row["graph_speedup"] = row["latency_ms"]["median"].get<double>() / *g;  // plain / graph median
    if (r.graphs && r.batch == 1 && r.workers == 1 && !r.on_device && row.contains("latency_ms")) g = row["latency_ms"]["median"].get<double>();
    if (!row.contains("latency_ms")) keep.clear();  // not run: no reference
    failed += !row["pass"].get<bool>();
    std::printf("timing %-10s %s batch %3d graphs %-3s workers %d%s%s %s\n", o.name.c_str(), r.fp16 ? "fp16" : "fp32", r.batch,
                r.graphs ? "on" : "off", r.workers, r.on_device ? " io on device" : "", r.legacy_conv ? " legacy cuDNN engine" : "",
                row.contains("latency_ms") ? (json{{"latency_ms", row["latency_ms"]}, {"images_per_s", row["images_per_s"]}, {"error", row["error"]}}.dump()).c_str()
                                           : row["error"].dump().c_str());
    emit(row);
  };
  auto or_null = [](const std::vector<HostTensor>& v) { return v.empty() ? nullptr : &v; };
  // Batch 1 with graphs in fp32 makes the fp32 reference (and, where fp16 leads, what fp16 is
  // held to: the model tolerance of fp16, 1e-2 of the largest |output|, docs/gpu.md "fp16").
  if (wants("fp32")) run_row(Row{1, true, nullptr, 0, nullptr}, ref32);
  Row first{1, true, nullptr, 0, nullptr};
  first.fp16 = primary16;
  if (primary16) {
    first.reference = or_null(ref32), first.tolerance = kFp16ModelTolerance, first.compared = "max_rel_diff_vs_fp32";
    run_row(first, ref16);
  }
  const std::vector<HostTensor>* ref = primary16 ? or_null(ref16) : or_null(ref32);
  const double batch_tolerance = primary16 ? kFp16ModelTolerance : 1e-3;  // fp16: cuDNN may pick another algorithm per batch
  auto row_of = [&](Row r) { r.fp16 = primary16; return r; };
  // The same kernels on the same layout: the replay's outputs are the plain launches' (1e-5: no
  // more than a reordered sum could move them).
  run_row(row_of(Row{1, false, ref, 1e-5, "max_rel_diff_vs_graph"}), scratch);
  // Batch 1 with its input written on the device and its outputs left there: the same graph's
  // kernels, without the upload and downloads (what --preprocess-on and --postprocess-on gpu save).
  run_row(row_of(Row{1, true, ref, 1e-5, "max_rel_diff_vs_graph", 1, true}), scratch);
  // Where the graph engine is on: the same row with the legacy engine alone (the tolerance of
  // another algorithm: cuDNN's two engines need not sum in the same order).
  const bool graph_engine_on = gpu && native::cuda_conv_graph_planning_budget() > 0;
  auto legacy_twin = [&](Row r) {
    r.legacy_conv = true, r.tolerance = batch_tolerance, r.compared = "max_rel_diff_vs_batch1";
    return r;
  };
  if (graph_engine_on) run_row(legacy_twin(row_of(Row{1, true, ref, 1e-5, "max_rel_diff_vs_graph", 1, true})), scratch);
  for (int b : o.batches)
    if (b != 1) run_row(row_of(Row{b, true, ref, batch_tolerance, "max_rel_diff_vs_batch1"}), scratch);
  // The largest batch again with its input written on the device and its outputs left there, as
  // the pipeline runs it with the GPU letterbox and decode + NMS: the first runs' batch rows
  // included copying the head (90 MB at batch 32) to host memory every run.
  if (!o.batches.empty()) {
    const int largest = *std::max_element(o.batches.begin(), o.batches.end());
    if (largest > 1) run_row(row_of(Row{largest, true, ref, batch_tolerance, "max_rel_diff_vs_batch1", 1, true}), scratch);
    if (largest > 1 && graph_engine_on) run_row(legacy_twin(row_of(Row{largest, true, ref, batch_tolerance, "max_rel_diff_vs_batch1", 1, true})), scratch);
  }
  // The same batch on two sessions at once: how much of the copies the other's kernels hide.
  if (o.overlap_batch > 0) run_row(row_of(Row{o.overlap_batch, true, ref, batch_tolerance, "max_rel_diff_vs_batch1", 2}), scratch);
  // fp16 leading: fp32's throughput at the largest batch beside it.
  if (primary16 && wants("fp32") && !o.batches.empty()) {
    const int largest = *std::max_element(o.batches.begin(), o.batches.end());
    if (largest > 1) run_row(Row{largest, true, or_null(ref32), 1e-3, "max_rel_diff_vs_batch1"}, scratch);
  }
  for (int b : o.profile_batches) profile(o, *model, gpu, image, b, primary16);
  return failed;
}

}  // namespace sd::gpu_check
